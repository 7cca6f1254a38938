import { randomUUID } from 'node:crypto';
import { link, mkdir, open, readFile, readdir, rename, rm, stat } from 'node:fs/promises';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Where payloads and Parquet partitions live. Paths are relative, `/`-separated object
 * keys. Writes are atomic: an object is either absent or complete. An S3-compatible store
 * can implement the same interface.
 */
export interface ObjectStore {
  /** Writes an object whole (temporary object + rename); replaces any previous one. */
  put(key: string, bytes: Uint8Array): Promise<void>;
  /** Writes an object only if it does not exist yet; false when it already did. */
  putIfAbsent(key: string, bytes: Uint8Array): Promise<boolean>;
  get(key: string): Promise<Uint8Array>;
  /** Deletes an object; deleting a missing one is not an error. */
  delete(key: string): Promise<void>;
  /** Keys under a prefix, sorted. */
  list(prefix: string): Promise<string[]>;
  size(key: string): Promise<number | null>;
  /**
   * The local file path of a key, for readers that open files themselves (DuckDB).
   * A future remote store would download or cache here.
   */
  localPath(key: string): string;
  /** The local folder holding every object, for DuckDB's allowed_directories. */
  readonly root: string;
}

/** Parses MICROMEGAS_OBJECT_STORE_URI; only `file://` is served for now. */
export function objectStoreFromUri(uri: string): ObjectStore {
  if (!uri.startsWith('file://')) {
    throw new Error(`MICROMEGAS_OBJECT_STORE_URI: only file:// URIs are supported, got '${uri}'`);
  }
  return new FileObjectStore(fileURLToPath(uri));
}

/** Objects as files under a folder. */
export class FileObjectStore implements ObjectStore {
  readonly root: string;

  constructor(root: string) {
    this.root = resolve(root);
  }

  localPath(key: string): string {
    const path = resolve(this.root, key);
    if (path !== this.root && !path.startsWith(this.root + sep))
      throw new Error(`object key '${key}' leaves the store`);
    return path;
  }

  async put(key: string, bytes: Uint8Array): Promise<void> {
    const path = this.localPath(key);
    const temporary = await this.writeTemporary(path, bytes);
    await rename(temporary, path);
  }

  async putIfAbsent(key: string, bytes: Uint8Array): Promise<boolean> {
    const path = this.localPath(key);
    if ((await this.size(key)) !== null) return false;
    const temporary = await this.writeTemporary(path, bytes);
    try {
      // link() fails when the target exists, which makes create-only atomic.
      await link(temporary, path);
      return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
      throw error;
    } finally {
      await rm(temporary, { force: true });
    }
  }

  async get(key: string): Promise<Uint8Array> {
    return readFile(this.localPath(key));
  }

  async delete(key: string): Promise<void> {
    await rm(this.localPath(key), { force: true });
  }

  async list(prefix: string): Promise<string[]> {
    const base = this.localPath(prefix.endsWith('/') ? prefix : dirname(prefix) === '.' ? '' : dirname(prefix));
    const out: string[] = [];
    const walk = async (dir: string): Promise<void> => {
      let entries;
      try {
        entries = await readdir(dir, { withFileTypes: true });
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
        throw error;
      }
      for (const entry of entries) {
        const path = join(dir, entry.name);
        if (entry.isDirectory()) await walk(path);
        else if (!entry.name.startsWith('.tmp-')) {
          const key = relative(this.root, path).split(sep).join('/');
          if (key.startsWith(prefix)) out.push(key);
        }
      }
    };
    await walk(base);
    return out.sort();
  }

  async size(key: string): Promise<number | null> {
    try {
      return (await stat(this.localPath(key))).size;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw error;
    }
  }

  private async writeTemporary(path: string, bytes: Uint8Array): Promise<string> {
    await mkdir(dirname(path), { recursive: true });
    const temporary = join(dirname(path), `.tmp-${randomUUID()}`);
    const handle = await open(temporary, 'wx');
    try {
      await handle.writeFile(bytes);
      await handle.sync();
    } finally {
      await handle.close();
    }
    return temporary;
  }
}
