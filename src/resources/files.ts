// A publication folder: `views/*.sql` (view sets as code, as `orrery views` reads them) and
// `resources/**/*.resources.json`. Local files (`x.local.resources.json`, `x.resources.local.json`,
// anything under a `.local/` folder) are not part of a publication, so they may not declare objects.
import { readdir, readFile, stat } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import { parseResourcesFile, type Diagnostic, type ResourcesFile } from './declarations.js';
import { ResourcesCliError } from './errors.js';

/** What a publication folder holds. */
export interface PublicationFiles {
  readonly dir: string;
  /** The resources files of the publication (local files left out), parsed, sorted by path. */
  readonly resources: readonly ResourcesFile[];
  /** `views/<name>.sql` path (relative, with `/`) → text. */
  readonly views: ReadonlyMap<string, string>;
  /** Problems of files that are not part of the publication (local files, overlays). */
  readonly diagnostics: readonly Diagnostic[];
}

const isResourcesName = (name: string): boolean => /\.resources(\.(local|overrides))?\.json$/.test(name);

/** Why a resources file path is local (excluded from publications), or null. */
export function localPathReason(path: string): string | null {
  const parts = path.split('/');
  if (parts.slice(0, -1).includes('.local')) return 'it is under a .local/ folder';
  const name = parts[parts.length - 1];
  if (/\.local\.resources\.json$/.test(name) || /\.resources\.local\.json$/.test(name)) return 'its name is .local';
  return null;
}

const isOverlay = (path: string): boolean => /\.overrides\.resources\.json$|\.resources\.overrides\.json$/.test(path);

/** Reads `<dir>/views/*.sql` and every resources file under `<dir>/resources/`, as path → text. */
export async function readPublicationTexts(dir: string): Promise<Map<string, string>> {
  const info = await stat(dir).catch(() => null);
  if (!info?.isDirectory()) throw new ResourcesCliError('RESOURCES_DIR_NOT_FOUND', `folder '${dir}' does not exist`);
  const texts = new Map<string, string>();
  for (const path of await listFiles(dir, 'views', false)) {
    if (path.endsWith('.sql')) texts.set(path, await read(dir, path));
  }
  for (const path of await listFiles(dir, 'resources', true)) {
    if (isResourcesName(path)) texts.set(path, await read(dir, path));
  }
  return texts;
}

/** Reads a publication folder (see {@link readPublicationTexts}) and parses it. */
export async function readPublicationFolder(dir: string): Promise<PublicationFiles> {
  return publicationOf(dir, await readPublicationTexts(dir));
}

/** A publication from its files (path relative to the folder → text), local files and overlays set apart. */
export function publicationOf(dir: string, texts: ReadonlyMap<string, string>): PublicationFiles {
  const views = new Map<string, string>();
  const resources: ResourcesFile[] = [];
  const diagnostics: Diagnostic[] = [];
  for (const path of [...texts.keys()].sort()) {
    const text = texts.get(path)!;
    if (/^views\/[^/]+\.sql$/.test(path)) {
      views.set(path, text);
      continue;
    }
    if (!path.startsWith('resources/') || !isResourcesName(path)) continue;
    const parsed = parseResourcesFile(path, text);
    if (isOverlay(path)) {
      diagnostics.push({
        file: path,
        entry: null,
        severity: 'error',
        message: 'resources files take no .overrides or .local overlays; edit the resources file itself',
      });
      continue;
    }
    const local = localPathReason(path);
    if (local === null) {
      resources.push(parsed);
      continue;
    }
    for (const entry of parsed.entries) {
      diagnostics.push({
        file: path,
        entry: entry.key,
        severity: 'error',
        message: `a local file cannot declare database objects (${local}, and local files are excluded from publications)`,
      });
    }
  }
  return { dir, resources, views, diagnostics };
}

/** The files of a publication that are part of it (local files left out). */
export function publishedTexts(texts: ReadonlyMap<string, string>): Map<string, string> {
  return new Map([...texts].filter(([path]) => path.startsWith('views/') || localPathReason(path) === null));
}

/** Files under `<dir>/<sub>` (recursively when asked), as paths relative to `dir` with `/`, sorted. */
async function listFiles(dir: string, sub: string, recursive: boolean): Promise<string[]> {
  const root = join(dir, sub);
  const info = await stat(root).catch(() => null);
  if (!info?.isDirectory()) return [];
  const entries = await readdir(root, { withFileTypes: true, recursive }).catch((error: Error) => {
    throw new ResourcesCliError('RESOURCES_FILE_ERROR', `cannot read folder '${root}': ${error.message}`);
  });
  return entries
    .filter((entry) => entry.isFile())
    .map((entry) => relative(dir, join(entry.parentPath, entry.name)).split(sep).join('/'))
    .sort();
}

async function read(dir: string, path: string): Promise<string> {
  return readFile(join(dir, path), 'utf8').catch((error: Error) => {
    throw new ResourcesCliError('RESOURCES_FILE_ERROR', `cannot read '${join(dir, path)}': ${error.message}`);
  });
}
