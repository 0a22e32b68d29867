// Types of the Settings commands (docs/app-contract.md §6; src-tauri/src/settings.rs). Keys are
// snake_case as the shell serialises them. No command ever returns an API key: only where it
// comes from and a masked form (`sk-…9f3a`).

export type Wire = 'openai' | 'anthropic';
export type KeySource = 'env' | 'keyring' | 'file';

export interface ProviderInfo {
  name: string;
  /** Known to the engine without configuration (openai, anthropic, ollama, ...). */
  builtin: boolean;
  /** Has an entry in the provider file. */
  configured: boolean;
  wire: Wire | null;
  base_url: string | null;
  /** The environment variable overriding the base URL, when it is set. */
  base_url_env: string | null;
  /** The environment variable the key is read from (`OPENAI_API_KEY`). */
  key_var: string;
  key_source: KeySource | null;
  /** `sk-…9f3a` */
  key_masked: string | null;
  /** A local server that works without a key. */
  key_optional: boolean;
  models: string[];
  timeout_s: number | null;
  /** Why calls to it cannot go anywhere. */
  error: string | null;
}

export interface Settings {
  /** The provider file. */
  path: string | null;
  /** The file exists but cannot be read (saving is refused until it is fixed). */
  file_error: string | null;
  default_model: string | null;
  /** `SWITCHYARD_MODEL`, which wins over `default_model`. */
  default_model_env: string | null;
  keyring: { available: boolean; message: string | null };
  providers: ProviderInfo[];
}

/** One provider as the form sends it (`settings_save`, `settings_test_provider`). */
export interface ProviderInput {
  name: string;
  wire: Wire;
  base_url: string | null;
  models: string[];
  timeout_s: number | null;
  /** A new key; null keeps the saved one. */
  api_key: string | null;
  /** Forget the saved key. */
  clear_key: boolean;
}

export interface SettingsChange {
  provider?: ProviderInput;
  remove?: string[];
  /** `provider:model`; "" clears; absent leaves it. */
  default_model?: string;
}

export interface SaveResult {
  settings: Settings;
  /** Where a new key went. */
  key_stored: KeySource | null;
  /** What to tell the user (e.g. the keyring was unavailable and the key went to the file). */
  message: string | null;
}

export interface ProbeResult {
  status: 'reachable' | 'auth_error' | 'unreachable' | 'error';
  message: string;
  models: string[];
}

/** `llm_models`: the models the open document names, for the live run configuration. */
export interface ModelsInfo {
  models: { model: string; origin: string; ready: boolean; problem: string | null }[];
  default_model: string | null;
  choices: string[];
}
