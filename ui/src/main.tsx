// main.tsx -- boots the app: the standalone tree page (a downloaded file, §4.9) when the
// page carries embedded tree data, else the routed single-page app.

import { render } from 'preact';
import './styles.css';
import { App } from './app';
import { offlineRoot } from './tree/offline';

const root = document.getElementById('app')!;
render(offlineRoot() ?? <App />, root);
