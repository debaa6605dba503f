import { render } from 'preact';

render(<main><h1>svc</h1></main>, document.getElementById('app')!);
