// Loopback ports for tests that start servers of their own: the product's own
// probe, as the OAuth callback listener uses it.
export { freeLoopbackPort as freePort } from '../../src/services/support/free-port.js';
