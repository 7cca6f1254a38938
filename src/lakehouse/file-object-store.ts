import { randomUUID } from 'node:crypto';
import { link, mkdir, open, readFile, readdir, rename, rm, stat } from 'node:fs/promises';
import { close, closeSync, fstatSync, fsync, open as openFd, writevSync } from 'node:fs';
import { promisify } from 'node:util';
import { dirname, join, relative, resolve, sep } from 'node:path';
import type { ObjectStore } from './object-store.js';

/**
 * How long a reserved file may wait for its putNew. Until written, its modification time is its creation, and the
 * orphan sweep deletes files no row names once older than its grace (ORRERY_ORPHAN_GRACE_SECONDS, hours by
 * default): one written within this bound cannot have been taken for an orphan by then.
 */
const RESERVATION_MS = 10_000;

/**
 * Writes `parts` at the start of the open file `fd`, fsyncs it, reads its link count and closes it (closed once, an
 * error or not); resolves with the link count. See writeSynced.
 */
export type SyncedWrite = (fd: number, parts: readonly Uint8Array[]) => Promise<number>;

/** Objects as files under a folder: writes by temporary file and rename, create-only by link(). */
export class FileObjectStore implements ObjectStore {
  readonly root: string;
  readonly aliases: readonly string[] = [];
  readonly duckdbSetup: readonly string[] = [];
  // DuckDB's defaults: it checks a cached local file against the file's modification time, which costs no request.
  readonly duckdbSettings: readonly string[] = [];
  readonly needsHttpfs = false;
  /** Files created ahead of their putNew (reserveNew), by key: their descriptors, open. */
  private readonly reserved = new Map<string, { at: number; path: string; fd: Promise<number | null> }>();

  /**
   * `syncedWrite`: how a group object's file is written, synced and closed (putNew); by default writeSynced. The
   * native addon's (src/engine/native/group-write.cc) makes the same calls on one libuv thread: the writev's copy of
   * the payloads into the page cache leaves the event loop, and one trip to the pool serves the four calls.
   */
  constructor(
    root: string,
    private readonly syncedWrite: SyncedWrite = writeSynced,
  ) {
    this.root = resolve(root);
  }

  location(key: string): string {
    const path = resolve(this.root, key);
    if (path !== this.root && !path.startsWith(this.root + sep))
      throw new Error(`object key '${key}' leaves the store`);
    return path;
  }

  /** Reserved files never written are deleted (nothing names them). */
  close(): void {
    for (const { path, fd } of this.reserved.values())
      void fd.then(async (f) => {
        if (f !== null) await closeFd(f).catch(() => undefined);
        await rm(path, { force: true }).catch(() => undefined);
      });
    this.reserved.clear();
  }

  async writableLocation(key: string): Promise<string> {
    const path = this.location(key);
    await mkdir(dirname(path), { recursive: true });
    return path;
  }

  async put(key: string, bytes: Uint8Array, options: { durable?: boolean } = {}): Promise<void> {
    const path = this.location(key);
    const durable = options.durable ?? true;
    const { temporary, folders } = await this.writeTemporary(path, bytes, durable);
    await rename(temporary, path);
    if (durable) await Promise.all([...folders].map(syncFolder));
  }

  /**
   * In place: open (create-only), one writev, fsync, close, then the folder's fsync (the new name); the folder is
   * created only when the open finds it missing. Two calls to the thread pool fewer than `put` (mkdir, rename),
   * no copy of the parts into one buffer, and nothing renamed between the file's fsync and the folder's. A key
   * reserved (reserveNew) has its file open and its name durable already: writev, fsync and close are left.
   */
  async putNew(key: string, parts: readonly Uint8Array[]): Promise<void> {
    const reserved = await this.reservation(key);
    // A reserved file deleted meanwhile (an orphan sweep whose clock says it is old) holds nothing: written anew.
    if (reserved !== null && (await this.syncedWrite(reserved, parts)) > 0) return;
    const { fd, folders } = await this.createNew(this.location(key));
    await this.syncedWrite(fd, parts);
    await Promise.all(folders.map(syncFolder));
  }

  reserveNew(keys: readonly string[]): void {
    const paths = keys.map((key) => this.location(key));
    const opened = (async (): Promise<Array<number | null>> => {
      // The folders first, once: each file's open then only creates its name, and one fsync per folder makes every
      // name made in it durable (the folders' own names, in their parents, too).
      const folders = [...new Set(paths.map((path) => dirname(path)))];
      const parents = (await Promise.all(folders.map((folder) => this.makeFolder(folder)))).flat();
      const fds = await Promise.all(paths.map((path) => openNew(path).catch(() => null)));
      try {
        await Promise.all([...new Set([...folders, ...parents])].map(syncFolder));
        return fds;
      } catch {
        await Promise.all(
          fds.map(async (fd, i) => {
            if (fd === null) return;
            await closeFd(fd).catch(() => undefined);
            await rm(paths[i], { force: true }).catch(() => undefined);
          }),
        );
        return fds.map(() => null);
      }
    })().catch(() => paths.map(() => null));
    const at = Date.now();
    keys.forEach((key, i) => this.reserved.set(key, { at, path: paths[i], fd: opened.then((f) => f[i]) }));
  }

  /**
   * The reserved file of `key`, open, its name durable; null when there is none or it cannot be used
   * (its creation failed, or it is older than RESERVATION_MS: then it is deleted, and putNew creates it anew).
   */
  private async reservation(key: string): Promise<number | null> {
    const reservation = this.reserved.get(key);
    if (!reservation) return null;
    this.reserved.delete(key);
    const fd = await reservation.fd;
    if (fd !== null && Date.now() - reservation.at <= RESERVATION_MS) return fd;
    if (fd !== null) await closeFd(fd).catch(() => undefined);
    await rm(reservation.path, { force: true });
    return null;
  }

  /** Creates the file of a new object, open for writing; returns it with the folders whose entries changed. */
  private async createNew(path: string): Promise<{ fd: number; folders: string[] }> {
    const folders = [dirname(path)];
    const fd = await openNew(path).catch(async (error: NodeJS.ErrnoException) => {
      if (error.code !== 'ENOENT') throw error;
      folders.push(...(await this.makeFolder(dirname(path))));
      return openNew(path);
    });
    return { fd, folders };
  }

  async putIfAbsent(key: string, bytes: Uint8Array): Promise<boolean> {
    const path = this.location(key);
    if ((await this.size(key)) !== null) return false;
    const { temporary, folders } = await this.writeTemporary(path, bytes, true);
    try {
      // link() fails when the target exists, which makes create-only atomic.
      await link(temporary, path);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
      throw error;
    } finally {
      await rm(temporary, { force: true });
    }
    // The file's data is synced, but its name lives in its folder: until the folder is synced too, a power
    // loss could lose the file.
    await Promise.all([...folders].map(syncFolder));
    return true;
  }

  async get(key: string): Promise<Uint8Array> {
    return readFile(this.location(key));
  }

  async readRange(key: string, offset: number, length: number): Promise<Uint8Array | null> {
    let handle;
    try {
      handle = await open(this.location(key), 'r');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw error;
    }
    try {
      const buffer = Buffer.alloc(length);
      const { bytesRead } = await handle.read(buffer, 0, length, offset);
      return buffer.subarray(0, bytesRead);
    } finally {
      await handle.close();
    }
  }

  async delete(key: string): Promise<void> {
    await rm(this.location(key), { force: true });
  }

  async list(prefix: string): Promise<string[]> {
    const keys: string[] = [];
    for await (const file of this.files(prefix)) if (!file.temporary) keys.push(file.key);
    return keys.sort();
  }

  // A folder is read whole (its entries come in no order): the range saves the sort and the keys, not the read.
  async listBetween(prefix: string, after: string, until: string): Promise<string[]> {
    const keys: string[] = [];
    for await (const file of this.files(prefix))
      if (!file.temporary && file.key > after && file.key <= until) keys.push(file.key);
    return keys.sort();
  }

  async *listWrittenBefore(prefix: string, before: Date): AsyncGenerator<string[]> {
    const page: string[] = [];
    for await (const file of this.files(prefix)) {
      const written = await stat(this.location(file.key)).then(
        (s) => s.mtime,
        () => undefined, // gone since the directory was read
      );
      if (written !== undefined && written < before) page.push(file.key);
      if (page.length === 1000) yield page.splice(0);
    }
    if (page.length > 0) yield page;
  }

  // A local store has no multipart uploads: a killed writer leaves a temporary file, which listWrittenBefore lists.
  abortUploadsStartedBefore(): Promise<number> {
    return Promise.resolve(0);
  }

  /** The files under a prefix, with the temporary files of writes under way (or killed) marked. */
  private async *files(prefix: string, dir?: string): AsyncGenerator<{ key: string; temporary: boolean }> {
    const here = dir ?? this.location(prefix.endsWith('/') ? prefix : dirname(prefix) === '.' ? '' : dirname(prefix));
    let entries;
    try {
      entries = await readdir(here, { withFileTypes: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw error;
    }
    for (const entry of entries) {
      const path = join(here, entry.name);
      if (entry.isDirectory()) yield* this.files(prefix, path);
      else {
        const key = relative(this.root, path).split(sep).join('/');
        if (key.startsWith(prefix)) yield { key, temporary: entry.name.startsWith('.tmp-') };
      }
    }
  }

  async size(key: string): Promise<number | null> {
    try {
      return (await stat(this.location(key))).size;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw error;
    }
  }

  /**
   * Writes bytes to a temporary file beside `path` (synced when durable); returns it with the folders whose
   * entries change when it takes its name: its own and, for each folder created on the way, its parent.
   */
  private async writeTemporary(
    path: string,
    bytes: Uint8Array,
    durable: boolean,
  ): Promise<{ temporary: string; folders: Set<string> }> {
    const folder = dirname(path);
    const folders = new Set([folder, ...(await this.makeFolder(folder))]);
    const temporary = join(folder, `.tmp-${randomUUID()}`);
    const handle = await open(temporary, 'wx');
    try {
      await handle.writeFile(bytes);
      if (durable) await handle.sync();
    } finally {
      await handle.close();
    }
    return { temporary, folders };
  }

  /** Creates a folder and its missing parents; returns the parent of each folder created (whose entries changed). */
  private async makeFolder(folder: string): Promise<string[]> {
    const created = await mkdir(folder, { recursive: true });
    const parents: string[] = [];
    if (created !== undefined) for (let f = folder; f !== dirname(created); f = dirname(f)) parents.push(dirname(f));
    return parents;
  }
}

/**
 * Writes the parts at the start of an open file, syncs and closes it; returns its link count after the sync. The
 * write (into the page cache, tens of microseconds) and the status are synchronous calls and the close is not
 * waited for: of the four trips to the thread pool this took, only the fsync's is left on a request's path (at 4
 * senders each trip is a wake-up of the event loop that a loaded machine makes wait for a core).
 */
async function writeSynced(fd: number, parts: readonly Uint8Array[]): Promise<number> {
  let synced: number;
  try {
    const size = parts.reduce((n, part) => n + part.byteLength, 0);
    const bytesWritten = writevSync(fd, parts as Uint8Array[]);
    if (bytesWritten !== size) throw new Error(`short write: ${bytesWritten} of ${size} bytes`);
    await fsyncFd(fd);
    synced = fstatSync(fd).nlink;
  } catch (error) {
    // The write's or the sync's error is the one to report, not the close's that may follow it. Linux frees the
    // descriptor even when close fails, so it is closed once either way.
    try {
      closeSync(fd);
    } catch {
      // The first error is the one thrown.
    }
    throw error;
  }
  // On the event loop: closing a file whose data is synced writes nothing, and a trip to the thread pool (a
  // thread woken, a callback, a promise) cost more than the call. Its error, the only one, fails the write.
  closeSync(fd);
  return synced;
}

/**
 * The group objects' files by descriptor rather than FileHandle: a FileHandle costs a JavaScript object, its
 * promises and a finalizer per file, and closes only through the thread pool.
 */
const openFdAsync = promisify(openFd);
const openNew = (path: string): Promise<number> => openFdAsync(path, 'wx');
const fsyncFd = promisify(fsync);
const closeFd = promisify(close);

/** fsync of a folder: makes the names created or changed in it durable. */
async function syncFolder(folder: string): Promise<void> {
  const handle = await open(folder, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
