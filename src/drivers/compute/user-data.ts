// What a server's cloud-init user data tells its machine agent: the `svc machine join --server URL
// --token svcb_...` line the service writes into it (worker bootstraps' `cloud_init`, provisioned
// machines). The local compute provider reads it as a real server's cloud-init would run it. The
// token is found wherever it stands (`--token T`, `--token=T`, `SVC_JOIN_TOKEN=T`), quoted or not.
const TOKEN = /(?<![A-Za-z0-9_])svcb_[A-Za-z0-9]{20,}/;
const SERVER = /--server(?:=|\s+)["']?(https?:\/\/[^\s"'\\]+)/;

/** The join token of the user data, or null when it has none. */
export function joinTokenFromUserData(userData: string): string | null {
  return TOKEN.exec(userData)?.[0] ?? null;
}

/** The server and token of the user data's join command (each null when absent). */
export function joinCommandFromUserData(userData: string): { server: string | null; token: string | null } {
  return { server: SERVER.exec(userData)?.[1]?.replace(/\/+$/, '') ?? null, token: joinTokenFromUserData(userData) };
}
