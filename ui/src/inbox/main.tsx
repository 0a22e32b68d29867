// The approvals inbox page (`ui/inbox.html`, built by `npm run build:inbox` into `ui/dist-inbox`,
// served by `switchyard serve` under `/inbox/`).
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import './inbox.css';
import { createApi } from './api';
import { InboxApp } from './InboxApp';

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <InboxApp api={createApi()} />
  </StrictMode>,
);
