import { Component, type ReactNode } from 'react';

interface State {
  error: Error | null;
}

/** Keeps a rendering bug in one pane from blanking the whole window. */
export class ErrorBoundary extends Component<{ children: ReactNode; label: string }, State> {
  state: State = { error: null };

  static getDerivedStateFromError(error: Error): State {
    return { error };
  }

  render() {
    if (!this.state.error) return this.props.children;
    return (
      <div className="crash" role="alert" data-testid="crash">
        <strong>The {this.props.label} failed to draw.</strong>
        <pre>{String(this.state.error.message || this.state.error)}</pre>
        <button type="button" className="btn" onClick={() => this.setState({ error: null })}>
          Try again
        </button>
      </div>
    );
  }
}
