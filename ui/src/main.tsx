import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import '@xyflow/react/dist/style.css';
import './styles.css';
import { App } from './App';
import { createFakeBackend, isTauri, setBackend } from './backend';
import { demoView } from './demo';

// Outside Tauri (plain `npm run dev` in a browser) run against the in-memory fake with a demo.
if (!isTauri()) setBackend(createFakeBackend(new URLSearchParams(location.search).has('empty') ? null : demoView(), ['/demo/agent.yaml']));

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <App />
  </StrictMode>,
);
