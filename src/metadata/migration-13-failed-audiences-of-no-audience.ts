// Migration 13: the failure of a view set's rows of no known audience (a NULL audience, a process not in processes)
// recorded with a NULL audience, apart from the failure of rows whose audience is '': both were recorded as '', one
// record for both (their errors joined), so that neither could be told from the other. A row of each stays unique.

export const failedAudiencesOfNoAudience = `
ALTER TABLE failed_audiences DROP CONSTRAINT failed_audiences_pkey;
ALTER TABLE failed_audiences ALTER COLUMN audience DROP NOT NULL;
CREATE UNIQUE INDEX failed_audiences_key ON failed_audiences (view_set_name, begin_ns, (audience IS NULL), coalesce(audience, ''));
`;
