// `turnhost user add | list | remove` (PROTOCOL.md §5.6): the people of a turnhost, in its store,
// so that every node of a cluster knows every user. A token is printed once, at `add`; only its
// SHA-256 is kept. A removal is seen by every daemon within a second (actors/daemon/user-directory.ts).
import { appendLogRecord } from '../../persistence/log.js';
import { newPersonalToken, tokenDigest, validUserName, type People } from '../../persistence/people.js';
import { DEFAULT_BUDGET, type Budget } from '../../persistence/ledger.js';
import { homePaths } from '../../protocol/home-paths.js';
import { printTable } from '../table.js';
import { withSideStore, type StoreFlag } from '../side-store-command.js';

export async function userAddCommand(home: string, name: string, options: StoreFlag & { admin?: boolean }): Promise<number> {
  if (!validUserName(name)) {
    process.stderr.write(`turnhost user add: a name is 1–64 letters, digits and . _ @ + - (and not "owner"): ${JSON.stringify(name.slice(0, 80))}\n`);
    return 2;
  }
  const token = newPersonalToken();
  const admin = options.admin === true;
  const added = await withPeople(home, options, (people) => people.addUser({ name, admin, token_sha256: tokenDigest(token), created_at: Date.now() }));
  if (added === null) return 1;
  if (!added) {
    process.stderr.write(`turnhost user add: a user named ${name} exists (remove them first to give a new token)\n`);
    return 1;
  }
  audit(home, 'user add', { name, admin });
  process.stdout.write(`${token}\n`);
  return 0;
}

export async function userListCommand(home: string, options: StoreFlag & { json?: boolean }): Promise<number> {
  const users = await withPeople(home, options, (people) => people.users());
  if (users === null) return 1;
  const shown = users.map((user) => ({
    name: user.name,
    role: user.admin ? 'admin' : 'member',
    created_at: new Date(user.created_at).toISOString(),
    last_seen_at: user.last_seen_at === null ? null : new Date(user.last_seen_at).toISOString(),
  }));
  if (options.json) {
    process.stdout.write(`${JSON.stringify(shown)}\n`);
    return 0;
  }
  printTable(['USER', 'ROLE', 'MADE', 'LAST SEEN'], shown.map((user) => [user.name, user.role, user.created_at, user.last_seen_at ?? '']));
  return 0;
}

export async function userRemoveCommand(home: string, name: string, options: StoreFlag): Promise<number> {
  const removed = await withPeople(home, options, (people) => people.removeUser(name));
  if (removed === null) return 1;
  if (!removed) {
    process.stderr.write(`turnhost user remove: no user named ${name}\n`);
    return 4;
  }
  audit(home, 'user remove', { name });
  process.stdout.write(`removed: ${name} (their tokens fail now; their connections close within 2 s)\n`);
  return 0;
}

/** The store's people for one command; null (said on stderr) when the store cannot be opened. */
function withPeople<T>(home: string, options: StoreFlag, work: (people: People) => Promise<T>): Promise<T | null> {
  return withSideStore(home, options, 'user', (side) => work(side.people));
}

/** `turnhost user budget` (PROTOCOL.md §5.7): set, remove or show a person's budget, or the default (`name` null); no name at all lists them. */
export async function userBudgetCommand(home: string, name: string | undefined, options: StoreFlag & BudgetFlags): Promise<number> {
  const who = options.default === true ? DEFAULT_BUDGET : name;
  if (who === undefined) return listBudgets(home, options);
  if (options.default === true && name !== undefined) return usageError('name a user or --default, not both');
  const change = budgetChange(options);
  if (typeof change === 'string') return usageError(change);
  const outcome = await withSideStore(home, options, 'user budget', async (side) => {
    if (who !== DEFAULT_BUDGET && !(await side.people.users()).some((u) => u.name === who)) return 'no such user' as const;
    if (change !== undefined) await side.ledger.setBudget(who, change);
    return { budget: (await side.ledger.budgets()).find((b) => b.user_name === who) ?? null };
  });
  if (outcome === null) return 1;
  if (outcome === 'no such user') {
    process.stderr.write(`turnhost user budget: no user named ${who}\n`);
    return 4;
  }
  if (change !== undefined) audit(home, 'user budget', { name: who, budget: change });
  return showBudget(who, outcome.budget);
}

interface BudgetFlags {
  default?: boolean;
  tokensPerDay?: number;
  turnsPerDay?: number;
  none?: boolean;
}

/** The new budget (null: none), undefined when nothing is to change, or what is wrong with the flags. */
function budgetChange(options: BudgetFlags): Budget | null | undefined | string {
  const limits = options.tokensPerDay !== undefined || options.turnsPerDay !== undefined;
  if (options.none === true) return limits ? '--none takes no limits' : null;
  if (!limits) return undefined;
  return { tokens_per_day: options.tokensPerDay ?? null, turns_per_day: options.turnsPerDay ?? null };
}

function showBudget(who: string, budget: Budget | null): number {
  const name = who === DEFAULT_BUDGET ? 'the default (members without their own)' : who;
  if (budget === null || (budget.tokens_per_day === null && budget.turns_per_day === null)) process.stdout.write(`${name}: no budget\n`);
  else process.stdout.write(`${name}: ${limitText(budget)} per UTC day\n`);
  return 0;
}

async function listBudgets(home: string, options: StoreFlag): Promise<number> {
  const budgets = await withSideStore(home, options, 'user budget', (side) => side.ledger.budgets());
  if (budgets === null) return 1;
  printTable(['USER', 'TOKENS/DAY', 'TURNS/DAY'], budgets.map((b) => [b.user_name === DEFAULT_BUDGET ? '(default)' : b.user_name, b.tokens_per_day ?? '-', b.turns_per_day ?? '-']));
  return 0;
}

function limitText(budget: Budget): string {
  const parts = [budget.tokens_per_day === null ? null : `${budget.tokens_per_day} tokens`, budget.turns_per_day === null ? null : `${budget.turns_per_day} turns`];
  return parts.filter((p) => p !== null).join(', ');
}

function usageError(message: string): number {
  process.stderr.write(`turnhost user budget: ${message}\n`);
  return 2;
}

function audit(home: string, action: string, detail: Record<string, unknown>): void {
  appendLogRecord(homePaths(home).audit, { at: new Date().toISOString(), user: 'owner', action, detail });
}
