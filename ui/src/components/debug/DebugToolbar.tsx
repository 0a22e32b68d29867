// Placeholder until the real component lands (created by the App wiring; replace freely).
export function DebugToolbar() {
  return null;
}
