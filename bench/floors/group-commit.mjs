// Group-commit floor: the turns that arrive together share their two commits; each turn.started
// and turn.end is written after the commit that covers it.
import { endLines, helloLine, openDatabase, readLines, startedLine, writeOut } from './floor-common.mjs';

const store = openDatabase(process.argv[2]);
writeOut(helloLine());
readLines((lines) => {
  const frames = lines.map((line) => JSON.parse(line));
  const turns = store.db.transaction(() => frames.map((f) => store.begin(f)))();
  writeOut(turns.map(startedLine).join(''));
  store.db.transaction(() => turns.forEach((t) => store.end(t)))();
  writeOut(turns.map(endLines).join(''));
});
