// Naive floor: each turn.start as it comes, two commits per turn, each frame written after its commit.
import { endLines, helloLine, openDatabase, readLines, startedLine, writeOut } from './floor-common.mjs';

const store = openDatabase(process.argv[2]);
writeOut(helloLine());
readLines((lines) => {
  for (const line of lines) {
    const frame = JSON.parse(line);
    const turn = store.db.transaction(() => store.begin(frame))();
    writeOut(startedLine(turn));
    store.db.transaction(() => store.end(turn))();
    writeOut(endLines(turn));
  }
});
