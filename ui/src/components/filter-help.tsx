/** The one-line filter syntax (ui/src/lib/filter-text.ts), with examples that run when clicked. */

const SYNTAX: [string, string][] = [
  ['timeout "connection reset"', 'text contains (case-insensitive); terms side by side must all match'],
  ['a OR b', 'either; AND binds tighter: a b OR c is (a b) OR c'],
  ['-a   NOT a   -(a OR b)', 'not'],
  ['="exact"   ^"GET /"', 'message equals, starts with'],
  ['/timeout|reset/   "Foo"c', 'RE2 regex; a trailing c makes it case-sensitive'],
  ['level:error,warn', 'level is one of'],
  ['stream:web/1   stream:web/*', 'stream name equals, starts with'],
  ['status>=500   user.id=42', 'JSON field: = != > >= < <= *= (contains)'],
  ['user.name:exists   code:in(500,502)', 'field present, field is one of'],
  ['@level=warn', 'a leading @ for the fields named level or stream'],
];

export const EXAMPLES: [string, string][] = [
  ['level:error,warn', 'errors and warnings'],
  ['timeout level:error,warn stream:web/* status>=500 -"health check"', 'failing web requests that timed out'],
  ['status>=500 -path=/healthz', 'server errors, health checks left out'],
  ['"payment declined" OR "cache miss"', 'either phrase'],
  ['/upstream (slow|timeout)/', 'a regex'],
];

export function FilterHelp({ onExample }: { onExample: (text: string) => void }) {
  return (
    <div class="filter-help" data-testid="filter-help">
      <h2>Filter syntax</h2>
      <table>
        <tbody>
          {SYNTAX.map(([code, meaning]) => (
            <tr key={code}>
              <td>
                <code>{code}</code>
              </td>
              <td>{meaning}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <p class="hint">
        Other words with a colon (<code>msg:x</code>) are refused: write <code>msg=x</code> for a JSON field, or quote
        the text (<code>"msg:x"</code>).
      </p>
      <h2>Examples (click to run)</h2>
      <ul class="examples">
        {EXAMPLES.map(([text, what]) => (
          <li key={text}>
            <button type="button" class="example" onClick={() => onExample(text)}>
              <code>{text}</code>
            </button>{' '}
            <span class="hint">{what}</span>
          </li>
        ))}
      </ul>
    </div>
  );
}
