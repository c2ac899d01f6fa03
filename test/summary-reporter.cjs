// Spec output plus the closing line CI reads: `N passed, N failed`. Just above it, each failed
// test's full title on a line of its own: the spec's account of a failure can be long (a frame
// log, a stderr tail), and an excerpt of the run's end must still name what failed.
const Mocha = require('mocha');

class SummaryReporter extends Mocha.reporters.Spec {
  constructor(runner, options) {
    super(runner, options);
    const failed = [];
    runner.on('fail', (test) => failed.push(test.fullTitle()));
    runner.once('end', () => {
      const s = runner.stats;
      for (const title of failed) console.log(`failed: ${title}`);
      const skipped = s.pending ? `, ${s.pending} skipped` : '';
      console.log(`${s.passes} passed, ${s.failures} failed${skipped}`);
    });
  }
}

module.exports = SummaryReporter;
