// Spec output plus the closing line CI reads: `N passed, N failed`.
const Mocha = require('mocha');

class SummaryReporter extends Mocha.reporters.Spec {
  constructor(runner, options) {
    super(runner, options);
    runner.once('end', () => {
      const s = runner.stats;
      const skipped = s.pending ? `, ${s.pending} skipped` : '';
      console.log(`${s.passes} passed, ${s.failures} failed${skipped}`);
    });
  }
}

module.exports = SummaryReporter;
