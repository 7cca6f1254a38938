// API keys: parsing the configured keyring, looking keys up, the generated local admin key.
export { Keyring, loadOrCreateLocalCredentials, parseAdmins, parseApiKeys } from './keyring.js';
export type { ApiKey, Principal } from './keyring.js';
