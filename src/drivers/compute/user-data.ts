// Where the service the agent joins is named in a server's cloud-init user data (join-tokens.ts
// writes it: `SVC_SERVER=URL` in the agent's environment file, or `--server URL` on the command
// line of a worker bootstrap's `command`). The local compute provider reads the token and the
// server here, as a real server's cloud-init runs them.

const SERVER = /(?:--server(?:=|\s+)|SVC_SERVER=)["']?(https?:\/\/[^\s"'\\]+)/;

/** The token in user data made by cloudInit (the local compute provider boots its servers from it). */
function joinTokenFromUserData(userData: string): string | null {
  const match = /SVC_JOIN_TOKEN=(svcb_[A-Za-z0-9_-]+)/.exec(userData) ?? /--token (svcb_[A-Za-z0-9_-]+)/.exec(userData);
  return match ? match[1]! : null;
}

/** The server and token of the user data's join command (each null when absent). */
export function joinCommandFromUserData(userData: string): { server: string | null; token: string | null } {
  return { server: SERVER.exec(userData)?.[1]?.replace(/\/+$/, '') ?? null, token: joinTokenFromUserData(userData) };
}
