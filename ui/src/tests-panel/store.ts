// The Tests panel's data: the agent test suites beside the open document (`suite_list`), the
// last result of each case (`suite_run`, one case or all), and the routing coverage of the last
// run of each suite. One store per app window; a new document lists its own suites.
import { createStore, useStore, type StoreApi } from 'zustand';
import { errorMessage, type Backend } from '../backend';
import type { CaseResult, Coverage, SuiteInfo, SuiteResult } from '../contract/suite';

export interface TestsState {
  open: boolean;
  suites: SuiteInfo[];
  /** The last result of each case, keyed `<suite file>::<case name>`. */
  results: Record<string, CaseResult>;
  /** The coverage of each suite's last run, by suite file. */
  coverage: Record<string, Coverage>;
  /** Problems reported when a suite was run (it could not run: untrusted, bad file). */
  problems: Record<string, string[]>;
  /** What is running: a suite file, or `<file>::<case>`; null when idle. */
  running: string | null;
  error: string | null;
  /** The coverage drawn on the canvas (the suite run last), and whether it is drawn. */
  shown: Coverage | null;
  onCanvas: boolean;
}

export interface TestsActions {
  setOpen(open: boolean): void;
  setOnCanvas(on: boolean): void;
  /** Ask the shell for the suites of the open document. */
  refresh(backend: Backend): Promise<void>;
  /** Run a suite's cases (all, or the one named). */
  run(backend: Backend, file: string, caseName: string | null): Promise<void>;
  clear(): void;
}

export type TestsStore = StoreApi<TestsState & TestsActions>;

export const caseKey = (file: string, name: string) => `${file}::${name}`;

/** Fold a suite's result into the state: its cases' results, its coverage, its problems. */
export function applyResult(s: TestsState, r: SuiteResult): Partial<TestsState> {
  const results = { ...s.results };
  for (const c of r.cases) results[caseKey(r.file, c.name)] = c;
  const coverage = { ...s.coverage };
  if (r.coverage) coverage[r.file] = r.coverage;
  const problems = { ...s.problems, [r.file]: r.diagnostics.filter((d) => d.severity === 'error').map((d) => `${d.line}:${d.column} ${d.message}`) };
  return { results, coverage, problems };
}

export function createTestsStore(): TestsStore {
  return createStore<TestsState & TestsActions>()((set, get) => ({
    open: false,
    suites: [],
    results: {},
    coverage: {},
    problems: {},
    running: null,
    error: null,
    shown: null,
    onCanvas: true,
    setOpen: (open) => set({ open }),
    setOnCanvas: (onCanvas) => set({ onCanvas }),
    async refresh(backend) {
      try {
        set({ suites: await backend.suiteList(), error: null });
      } catch (e) {
        set({ suites: [], error: errorMessage(e) });
      }
    },
    async run(backend, file, caseName) {
      set({ running: caseName === null ? file : caseKey(file, caseName), error: null });
      try {
        const r = await backend.suiteRun(file, caseName);
        set({ ...applyResult(get(), r), running: null, shown: r.coverage ?? get().shown });
      } catch (e) {
        set({ running: null, error: errorMessage(e) });
      }
    },
    clear: () => set({ suites: [], results: {}, coverage: {}, problems: {}, error: null, shown: null }),
  }));
}

/** The window's one store (the panel and the tests share it through `testsStore`). */
export const testsStore = createTestsStore();

export function useTests<T>(selector: (s: TestsState & TestsActions) => T): T {
  return useStore(testsStore, selector);
}
