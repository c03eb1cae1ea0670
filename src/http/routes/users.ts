import type { Router } from 'express';
import { loadExpress } from '../express.js';
import { z } from 'zod';
import { GroupName, Quota, UserExistsError, UserName, type Users } from '../../users/index.js';
import { HttpError } from '../errors.js';

/**
 * `POST /api/mcp/users`: `{"name": "...", "groups": [...], "calls_per_minute": N, "max_concurrent_calls": N}`
 * (all but the name optional; a limit absent takes the worker's default, `null` is none for this user).
 */
const UserCreate = z.strictObject({ name: UserName, groups: z.array(GroupName).default([]), ...Quota.shape });

/**
 * The users (admin only, the app puts the check in front): list, add (the
 * answer holds the key, the only time it is shown), rotate a key, remove.
 */
export function userRoutes(users: Users, hooks: { onRemoved?(name: string): Promise<void> } = {}): Router {
  const router = loadExpress().Router();

  router.get('/', async function listUsers(_req, res) {
    res.json({ users: await users.list() });
  });

  router.post('/', async function addUser(req, res) {
    const { name, groups, ...quota } = UserCreate.parse(req.body ?? {});
    try {
      const added = await users.add(name, groups, quota);
      res.setHeader('Cache-Control', 'no-store');
      res.status(201).location(`/api/mcp/users/${name}`).json(added);
    } catch (error) {
      if (error instanceof UserExistsError) throw new HttpError(409, 'conflict', error.message, 'name');
      throw error;
    }
  });

  // A new key; the old one stops working at once (its page sessions too).
  router.post('/:name/rotate', async function rotateKey(req, res) {
    const rotated = await users.rotate(req.params.name);
    if (rotated === undefined) throw new HttpError(404, 'not_found', `no user named "${req.params.name}"`);
    res.setHeader('Cache-Control', 'no-store');
    res.json(rotated);
  });

  // The user's own limits, replaced whole: a field left out is the worker's default again. Calls of a key
  // or page session already signed in count under the new limits from their next request on.
  router.put('/:name/quota', async function setQuota(req, res) {
    const quota = Quota.parse(req.body ?? {});
    const updated = await users.setQuota(req.params.name, quota);
    if (updated === undefined) throw new HttpError(404, 'not_found', `no user named "${req.params.name}"`);
    res.json(updated);
  });

  router.delete('/:name', async function removeUser(req, res) {
    if (!(await users.remove(req.params.name))) throw new HttpError(404, 'not_found', `no user named "${req.params.name}"`);
    await hooks.onRemoved?.(req.params.name);
    res.status(204).end();
  });

  return router;
}
