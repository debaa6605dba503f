// Who may read secret values: the role `:access` needs. Output derived from a secret value (a
// snippet run or an agent tool call that read one) is shown to the same roles only, since masking
// cannot catch a value split, reversed or re-encoded (issue 33).
import { roleAtLeast, type Role } from '../../platform/auth.js';

export const SECRET_VALUE_READER_ROLE: Role = 'admin';

export function readsSecretValues(role: Role): boolean {
  return roleAtLeast(role, SECRET_VALUE_READER_ROLE);
}
