import { adminKey } from './orrery-process.js';

/** The text of a server's /metrics, read with an admin key (the suites' own unless given); throws unless 200. */
export async function scrapeMetrics(httpPort: number | string, key: string = adminKey.key): Promise<string> {
  const response = await fetch(`http://127.0.0.1:${httpPort}/metrics`, {
    headers: { authorization: `Bearer ${key}` },
  });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`GET /metrics answered ${response.status}: ${text}`);
  return text;
}

/** The value of an unlabelled metric on the server's /metrics (NaN when it is not there). */
export async function metricValue(httpPort: number, name: string, key?: string): Promise<number> {
  const text = await scrapeMetrics(httpPort, key);
  return Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1]);
}
