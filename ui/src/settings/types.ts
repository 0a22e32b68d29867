// Types of the Settings commands (docs/app-contract.md §6; src-tauri/src/settings.rs), generated
// from the Rust types into ../contract/shell.ts. No command ever returns an API key: only where
// it comes from and a masked form (`sk-…9f3a`).

import type { ProviderInfo } from '../contract/shell';

export type {
  DocModel,
  KeySource,
  KeyringInfo,
  ModelsInfo,
  ProbeResult,
  ProbeStatus,
  ProviderInfo,
  ProviderInput,
  SaveResult,
  Settings,
  SettingsChange,
} from '../contract/shell';

/** A provider's wire format (the engine's `Wire`). */
export type Wire = NonNullable<ProviderInfo['wire']>;
