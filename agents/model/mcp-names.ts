// MCP tools are offered to the model as `mcp_<server>_<tool>` (AGENT.md §2), with characters
// outside [A-Za-z0-9_-] folded to `_`. Folding can make two servers' tools meet: `fs_safe` (tool
// `read`) and `fs` (tool `safe_read`) both give `mcp_fs_safe_read`. Such servers are refused
// together when the config is read, so that every offered name belongs to one server; and an
// approval rule that names a server (`mcp_fs_*`) applies to that server's tools only.

export function mcpToolName(server: string, tool: string): string {
  return `mcp_${foldName(server)}_${foldName(tool)}`;
}

function foldName(text: string): string {
  return text.replace(/[^A-Za-z0-9_-]/g, '_');
}

/** The prefix every tool name of this server starts with. */
function prefixOf(server: string): string {
  return `mcp_${foldName(server)}_`;
}

/** Why these servers cannot be configured together, naming both; null when their tool names cannot meet. */
export function serverNameClash(servers: readonly string[]): string | null {
  for (const [i, a] of servers.entries()) {
    for (const b of servers.slice(i + 1)) {
      const [short, long] = prefixOf(a).length <= prefixOf(b).length ? [a, b] : [b, a];
      if (prefixOf(long).startsWith(prefixOf(short))) {
        return `the servers "${short}" and "${long}" would give tools the same names (both under ${prefixOf(long)}…): rename one of them`;
      }
    }
  }
  return null;
}

/** The configured server whose tools a glob names by its prefix (`mcp_fs_read*` → `fs`), if any. */
export function serverNamedBy(glob: string, servers: readonly string[]): string | undefined {
  return servers.find((server) => glob.startsWith(prefixOf(server)));
}
