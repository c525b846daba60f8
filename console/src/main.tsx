import { render } from 'preact';
import { App } from './app';
import { session } from './session';
import './style.css';

const root = document.getElementById('app')!;
// Who is signed in before the first render (index.html preloads the answer beside the scripts): a
// signed-in reload draws its page at once, not the sign-in form first. If it cannot be read, the
// sign-in page asks again and says why.
void session.state().then(
  (opened) => render(<App opened={opened} />, root),
  () => render(<App />, root),
);
