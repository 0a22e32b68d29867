// ESLint for the UI (`npm run lint`, part of `npm run check`): typescript-eslint's recommended
// rules, the rules of hooks, and the import boundaries between the folders of src/.
//
// Layers of src/ (an arrow is "may import"):
//
//   test/ ──────────────► anything
//   fake/  (the in-memory backend and demo documents: tests and `npm run dev` only)
//          ──────────────► the data layer (never components/, App, main, test/)
//   App.tsx, main.tsx ──► everything below; main.tsx loads fake/ only through its DEV-guarded
//                         `import('./fake/dev')`, which `vite build` drops (scripts/check-bundle.mjs)
//   components/*.tsx ───► components/debug/ (the canvas draws a run), the data layer
//   components/debug/ ──► components/*.tsx, debug/, settings/types, the top-level modules;
//                         never components/settings/ or the rest of settings/
//   components/settings/ ► components/*.tsx, settings/, the top-level modules; never anything
//                         of the debugger (components/debug/, debug/)
//   data layer: the top-level .ts modules (backend, store, types, untrusted, flow, shortcuts, …),
//   debug/ and settings/ ──► the data layer only (never components/, App or main), and debug/
//                         and settings/ not each other
//   contract/  (TypeScript generated from the engine's Rust types; anyone may import it)
//          ──────────────► nothing outside contract/
//
// No production file may import test/, fake/, vitest or Testing Library. `no-restricted-imports`
// only sees static imports and re-exports, so relative `import()` is refused outside main.tsx.
// The patterns are matched against the import specifier, which is relative (`../debug/x`) and so
// does not say by itself whether it means components/debug/ or debug/: each folder name is refused
// wherever it appears in the path, and every rule that refuses one debug/ refuses both.
import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import globals from 'globals';
import reactHooks from 'eslint-plugin-react-hooks';
import tseslint from 'typescript-eslint';

/** A relative specifier with the folder or module `name` as one of its segments (`../debug/x`,
 *  `./debug`, `../../components/debug/x`): the whole name, wherever it appears. */
const segment = (name, rest = '(?:/|$)') => `^\\.\\.?/(?:.*/)?${name}${rest}`;

const NOT_TEST_CODE = {
  regex: `${segment('(?:test|fake)')}|^vitest(?:/|$)|^@testing-library/`,
  message: 'Test and dev-only code (src/test/, src/fake/, vitest, Testing Library) must not reach production code.',
};
const NO_UI = {
  regex: `${segment('components')}|${segment('(?:App|main)', '(?:\\.tsx?)?$')}`,
  message: 'The data layer (top-level .ts modules, src/debug/, src/settings/) must not import components, App or main.',
};
const NO_DEBUGGER = {
  regex: segment('debug'),
  message: 'Settings code must not depend on the debugger (src/debug/, src/components/debug/).',
};
const NO_SETTINGS = {
  regex: segment('settings'),
  message: 'The debugger data layer (src/debug/) must not depend on settings.',
};
const ONLY_CONTRACT = {
  regex: '^\\.\\./',
  message: 'src/contract/ is generated from the Rust types: it imports nothing outside itself.',
};
const NO_SETTINGS_EXCEPT_TYPES = {
  regex: segment('settings', '(?:/(?!types(?:\\.ts)?$)|$)'),
  message: 'Debugger code may use the settings types (src/settings/types.ts) only, not the settings UI or form logic.',
};

/** `no-restricted-imports` for one group of files; flat config replaces a rule's options rather
 *  than merging them, so each group lists all of its restrictions. */
const boundary = (files, ...patterns) => ({
  files,
  ignores: ['src/test/**'],
  rules: { 'no-restricted-imports': ['error', { patterns }] },
});

/** Relative `import()` (which `no-restricted-imports` does not see). */
const dynamicImport = (allowed) => ({
  selector: allowed ? `ImportExpression[source.value=/^\\./][source.value!='${allowed}']` : 'ImportExpression[source.value=/^\\./]',
  message: 'A relative import() escapes the import boundaries of eslint.config.js; import statically.',
});

export default defineConfig(
  { ignores: ['dist/', 'dist-inbox/', 'coverage/', 'node_modules/'] },
  js.configs.recommended,
  tseslint.configs.recommended,
  {
    files: ['src/**/*.{ts,tsx}'],
    languageOptions: { globals: globals.browser },
    plugins: { 'react-hooks': reactHooks },
    rules: {
      'react-hooks/rules-of-hooks': 'error',
      'react-hooks/exhaustive-deps': 'warn',
      // `_name` marks a parameter a signature needs but the body does not use.
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
    },
  },
  {
    files: ['*.{js,mjs,ts}', 'scripts/**/*.{js,mjs}'],
    languageOptions: { globals: globals.node },
  },

  // Import boundaries. First every production file, then each folder (a superset of the first).
  boundary(['src/**/*.{ts,tsx}'], NOT_TEST_CODE),
  boundary(['src/*.ts', 'src/debug/**/*.{ts,tsx}', 'src/settings/**/*.{ts,tsx}'], NOT_TEST_CODE, NO_UI),
  boundary(['src/debug/**/*.{ts,tsx}'], NOT_TEST_CODE, NO_UI, NO_SETTINGS),
  boundary(['src/settings/**/*.{ts,tsx}'], NOT_TEST_CODE, NO_UI, NO_DEBUGGER),
  boundary(['src/components/debug/**/*.{ts,tsx}'], NOT_TEST_CODE, NO_SETTINGS_EXCEPT_TYPES),
  boundary(['src/components/settings/**/*.{ts,tsx}'], NOT_TEST_CODE, NO_DEBUGGER),
  boundary(['src/contract/**/*.ts'], NOT_TEST_CODE, NO_UI, ONLY_CONTRACT),
  {
    files: ['src/fake/**/*.{ts,tsx}'],
    rules: {
      'no-restricted-imports': ['error', {
        patterns: [
          { regex: `${segment('test')}|^vitest(?:/|$)|^@testing-library/`, message: 'src/fake/ runs in `npm run dev` too: it must not import test code.' },
          { ...NO_UI, message: 'src/fake/ stands in for the backend: it must not import components.' },
        ],
      }],
    },
  },
  {
    files: ['src/**/*.{ts,tsx}'],
    ignores: ['src/test/**', 'src/main.tsx'],
    rules: { 'no-restricted-syntax': ['error', dynamicImport(null)] },
  },
  {
    files: ['src/main.tsx'],
    rules: { 'no-restricted-syntax': ['error', dynamicImport('./fake/dev')] },
  },
  // Chunks loaded after the first window (src/lazy.ts): each of these files may import() its one
  // module, which the boundaries above let it import statically.
  {
    files: ['src/App.tsx'],
    rules: { 'no-restricted-syntax': ['error', dynamicImport('./components/SourceView')] },
  },
  {
    files: ['src/components/Markdown.tsx'],
    rules: { 'no-restricted-syntax': ['error', dynamicImport('./MarkdownBody')] },
  },
);
