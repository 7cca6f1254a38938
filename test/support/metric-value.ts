/** The value of an unlabelled metric on the server's /metrics (NaN when it is not there). */
export async function metricValue(httpPort: number, name: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${httpPort}/metrics`)).text();
  return Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1]);
}
