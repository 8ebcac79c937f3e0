/** The page's entry: mounts the app over the static shell of index.html. */
import { render } from 'preact'
import { App } from './views/app.js'
import './styles.css'

const root = document.getElementById('app')
if (root !== null) {
  root.textContent = ''
  render(<App />, root)
}
