// Which principal an identity provider's claims make: the user claim as the
// id, the groups claim as groups; no account may take the admin's name or
// `__proto__` (no record of a user could hold it), and a name like
// `constructor` is an ordinary one.
import { describe, expect, it } from 'vitest';
import { principalOfClaims } from '../../src/users/oidc.js';

const names = { userClaim: 'preferred_username', groupsClaim: 'groups' };
const refuse = (why: 'no_user' | 'admin') => new Error(why);

describe('principalOfClaims', () => {
  it('takes the user claim as the id and keeps only usable groups, once each', () => {
    expect(principalOfClaims({ preferred_username: 'constructor', groups: ['ops', 'ops', '', 7, 'a\u0007b', 'dev'] }, names, refuse)).toEqual({
      id: 'constructor',
      groups: ['ops', 'dev'],
    });
    expect(principalOfClaims({ preferred_username: 'toString', groups: 'ops' }, names, refuse)).toEqual({ id: 'toString', groups: ['ops'] });
  });

  it('refuses a missing, empty, control-character or __proto__ user claim, and the admin name', () => {
    for (const id of [undefined, '', 'a\nb', '__proto__', 42]) {
      expect(() => principalOfClaims({ preferred_username: id }, names, refuse), String(id)).toThrow('no_user');
    }
    expect(() => principalOfClaims({ preferred_username: 'admin' }, names, refuse)).toThrow('admin');
  });
});
