// Loopback ports for tests that start servers of their own: the product's own
// probe, as the OAuth callback listener uses it.
export { freeLoopbackPort as freePort } from '../../src/auth/free-port.js';
