/**
 * Users and what they may see: principals, user keys (stored hashed), the
 * users store (file, PostgreSQL) and the access policy of servers and tools.
 */
// The public surface: what the rest of src/ uses of this domain.
export { ADMIN_PRINCIPAL, GroupName, Me, parsePrincipal, Principal, UserName, type PrincipalInput } from './principal.js';
export { allows, maySeeServer, maySeeTool, withoutPolicy, type Guarded } from './policy.js';
export { isUserKey, keyHash, newUserKey, USER_KEY_PREFIX } from './keys.js';
export { createFileUsersStore, StoredUser, UserExistsError, usersPath, type UsersStore, type UserView } from './store.js';
export { createPgUsersStore } from './pg-users-store.js';
export { createUsers, principalOfUser, type Users } from './users.js';
// The sign-in itself (./oidc.js) is imported where it is used: it loads a JWT library the CLI does not need.
export { OIDC_CLIENT_SECRET_ENV, type OidcOptions } from './oidc-options.js';
export { createQuotas, Quota, CONCURRENCY_RETRY_SECONDS, type Admission, type QuotaLimit, type QuotaRefusal, type Quotas } from './quota.js';
export { createFileInputsStore, inputsPath, type InputsPatch, type UserInputsStore } from './inputs-store.js';
export { createPgInputsStore } from './pg-inputs-store.js';
