import { useState } from 'preact/hooks';
import type { FilterNode } from '../../../src/core/filter-tree/schema.js';
import { LEVELS } from './histogram.js';

type Scalar = string | number | boolean | null;

interface NodeProps {
  node: FilterNode;
  path: string;
  reasons: Map<string, string[]>;
  onChange: (node: FilterNode) => void;
  onRemove?: () => void;
}

const NEW_LEAF: Record<string, FilterNode> = {
  text: { kind: 'text', op: 'contains', value: '' },
  level: { kind: 'level', levels: ['ERROR'] },
  field: { kind: 'field', path: 'status', op: 'eq', value: '' },
  stream: { kind: 'stream', op: 'prefix', value: '' },
};

/**
 * The filter as a tree: and/or groups, not, and level/text/field/stream predicates. What it shows is the API's
 * `filter` itself (no model of its own), so it round-trips exactly; `unsupported` reasons appear at their node.
 */
export function FilterEditor({
  filter,
  reasons,
  onChange,
}: {
  filter: FilterNode;
  reasons: Map<string, string[]>;
  onChange: (f: FilterNode) => void;
}) {
  const grouped = filter.kind === 'and' || filter.kind === 'or';
  // Anything but a group is shown inside an implicit "all of" group, and sent back without it.
  const root = (grouped ? filter : { kind: 'and', nodes: filter.kind === 'all' ? [] : [filter] }) as FilterNode;
  const shown = grouped
    ? reasons
    : new Map([...reasons].map(([path, list]) => [path.replace(/^filter/, 'filter.nodes[0]'), list]));
  return (
    <div class="tree" data-testid="filter-editor">
      <NodeEditor
        node={root}
        path="filter"
        reasons={shown}
        onChange={(n) => {
          const next = withoutEmptyGroups(n) ?? { kind: 'all' };
          const implicit = !grouped && (next.kind === 'and' || next.kind === 'or') && next.nodes.length === 1;
          onChange(implicit ? (next as { nodes: FilterNode[] }).nodes[0]! : next);
        }}
      />
    </div>
  );
}

/** The API refuses an empty group: an emptied group goes away (the root then means "no filter"). */
function withoutEmptyGroups(node: FilterNode): FilterNode | undefined {
  if (node.kind === 'and' || node.kind === 'or') {
    const nodes = (node.nodes as FilterNode[]).map(withoutEmptyGroups).filter((n) => n !== undefined);
    return nodes.length === 0 ? undefined : ({ ...node, nodes } as FilterNode);
  }
  if (node.kind === 'not') {
    const inner = withoutEmptyGroups(node.node);
    return inner === undefined ? undefined : { kind: 'not', node: inner };
  }
  return node;
}

function Reasons({ path, reasons }: { path: string; reasons: Map<string, string[]> }) {
  const list = reasons.get(path);
  if (!list) return null;
  return (
    <ul class="unsupported" data-testid="unsupported-reason">
      {list.map((r) => (
        <li key={r}>Not applied: {r}</li>
      ))}
    </ul>
  );
}

function NodeEditor({ node, path, reasons, onChange, onRemove }: NodeProps) {
  const remove = onRemove && (
    <button type="button" class="icon" aria-label="Remove this condition" onClick={onRemove}>
      ×
    </button>
  );
  if (node.kind === 'and' || node.kind === 'or') {
    const nodes = node.nodes as FilterNode[];
    const set = (i: number, n: FilterNode) =>
      onChange({ ...node, nodes: nodes.map((c, j) => (j === i ? n : c)) } as FilterNode);
    const add = (n: FilterNode) => onChange({ ...node, nodes: [...nodes, n] } as FilterNode);
    return (
      <fieldset class="group">
        <legend>
          <select
            aria-label="Combine conditions with"
            value={node.kind}
            onChange={(e) => onChange({ ...node, kind: e.currentTarget.value } as FilterNode)}
          >
            <option value="and">All of (and)</option>
            <option value="or">Any of (or)</option>
          </select>
          {remove}
        </legend>
        <Reasons path={path} reasons={reasons} />
        {nodes.map((child, i) => (
          <NodeEditor
            key={i}
            node={child}
            path={`${path}.nodes[${i}]`}
            reasons={reasons}
            onChange={(n) => set(i, n)}
            onRemove={() => onChange({ ...node, nodes: nodes.filter((_, j) => j !== i) } as FilterNode)}
          />
        ))}
        <AddButtons onAdd={add} />
      </fieldset>
    );
  }
  if (node.kind === 'not') {
    return (
      <div class="not">
        <span class="not-label">
          NOT
          <button type="button" class="link" onClick={() => onChange(node.node)}>
            (remove NOT)
          </button>
          {remove}
        </span>
        <Reasons path={path} reasons={reasons} />
        <NodeEditor
          node={node.node}
          path={`${path}.node`}
          reasons={reasons}
          onChange={(n) => onChange({ kind: 'not', node: n })}
        />
      </div>
    );
  }
  return (
    <div class="leaf" data-path={path}>
      <LeafEditor node={node} onChange={onChange} />
      <button type="button" class="link" onClick={() => onChange({ kind: 'not', node })}>
        NOT
      </button>
      {remove}
      <Reasons path={path} reasons={reasons} />
    </div>
  );
}

function AddButtons({ onAdd }: { onAdd: (n: FilterNode) => void }) {
  return (
    <div class="add">
      <span>Add:</span>
      {Object.entries(NEW_LEAF).map(([kind, n]) => (
        <button key={kind} type="button" onClick={() => onAdd(n)}>
          {kind}
        </button>
      ))}
      <button type="button" onClick={() => onAdd({ kind: 'or', nodes: [NEW_LEAF.text!] } as FilterNode)}>
        group
      </button>
    </div>
  );
}

function LeafEditor({ node, onChange }: { node: FilterNode; onChange: (n: FilterNode) => void }) {
  switch (node.kind) {
    case 'level':
      return (
        <fieldset class="levels">
          <legend class="visually-hidden">Levels</legend>
          {LEVELS.map((l) => (
            <label key={l} class={`level-${l.toLowerCase()}`}>
              <input
                type="checkbox"
                checked={node.levels.includes(l)}
                onChange={(e) => {
                  const levels = e.currentTarget.checked ? [...node.levels, l] : node.levels.filter((x) => x !== l);
                  if (levels.length > 0) onChange({ kind: 'level', levels });
                }}
              />
              {l}
            </label>
          ))}
        </fieldset>
      );
    case 'text':
      return (
        <span>
          <select
            aria-label="Message match"
            value={node.op}
            onChange={(e) => onChange({ ...node, op: e.currentTarget.value as typeof node.op })}
          >
            <option value="contains">message contains</option>
            <option value="equals">message equals</option>
            <option value="startsWith">message starts with</option>
            <option value="regex">message matches regex</option>
          </select>
          <input
            aria-label="Text"
            value={node.value}
            onChange={(e) => onChange({ ...node, value: e.currentTarget.value })}
          />
          <label>
            <input
              type="checkbox"
              checked={node.caseSensitive === true}
              onChange={(e) => {
                const { caseSensitive: _c, ...rest } = node;
                onChange(e.currentTarget.checked ? { ...rest, caseSensitive: true } : rest);
              }}
            />
            Case-sensitive
          </label>
        </span>
      );
    case 'stream':
      return (
        <span>
          <select
            aria-label="Stream match"
            value={node.op}
            onChange={(e) => onChange({ ...node, op: e.currentTarget.value as typeof node.op })}
          >
            <option value="prefix">stream starts with</option>
            <option value="equals">stream is</option>
          </select>
          <input
            aria-label="Stream"
            value={node.value}
            onChange={(e) => onChange({ ...node, value: e.currentTarget.value })}
          />
        </span>
      );
    case 'field':
      return <FieldEditor node={node} onChange={onChange} />;
    default:
      return <span>{JSON.stringify(node)}</span>;
  }
}

type FieldNode = Extract<FilterNode, { kind: 'field' }>;

function FieldEditor({ node, onChange }: { node: FieldNode; onChange: (n: FilterNode) => void }) {
  const value = 'value' in node ? node.value : undefined;
  const [draft, setDraft] = useState(() => (node.op === 'in' ? JSON.stringify(value) : undefined));
  const [bad, setBad] = useState(false);
  const setOp = (op: string) => {
    const base = { kind: 'field' as const, path: node.path };
    if (op === 'exists') return onChange({ ...base, op });
    if (op === 'in') return onChange({ ...base, op, value: Array.isArray(value) ? value : [scalarOf(value)] });
    const v = Array.isArray(value) ? (value[0] ?? '') : (value ?? '');
    if (op === 'gt' || op === 'gte' || op === 'lt' || op === 'lte')
      return onChange({ ...base, op, value: typeof v === 'number' ? v : String(v) });
    return onChange({ ...base, op: op as 'eq', value: v });
  };
  return (
    <span>
      <input
        aria-label="JSON field path"
        class="path"
        value={node.path}
        onChange={(e) => onChange({ ...node, path: e.currentTarget.value })}
      />
      <select aria-label="Field comparison" value={node.op} onChange={(e) => setOp(e.currentTarget.value)}>
        {['eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'contains', 'in', 'exists'].map((op) => (
          <option key={op} value={op}>
            {op}
          </option>
        ))}
      </select>
      {node.op === 'in' ? (
        <input
          aria-label="Values (JSON array)"
          aria-invalid={bad}
          value={draft ?? JSON.stringify(value)}
          onChange={(e) => {
            const text = e.currentTarget.value;
            setDraft(text);
            try {
              const parsed: unknown = JSON.parse(text);
              const ok =
                Array.isArray(parsed) && parsed.length > 0 && parsed.every((x) => x === null || typeof x !== 'object');
              setBad(!ok);
              if (ok) onChange({ ...node, value: parsed as Scalar[] });
            } catch {
              setBad(true);
            }
          }}
        />
      ) : node.op !== 'exists' ? (
        <ScalarInput
          value={value as Scalar}
          numericOnly={['gt', 'gte', 'lt', 'lte'].includes(node.op)}
          onChange={(v) => onChange({ ...node, value: v } as FilterNode)}
        />
      ) : null}
    </span>
  );
}

function scalarOf(v: unknown): Scalar {
  return v === undefined || (typeof v === 'object' && v !== null) ? '' : (v as Scalar);
}

/** A value and its JSON type, so "42" and 42 stay what they are. */
function ScalarInput({
  value,
  numericOnly,
  onChange,
}: {
  value: Scalar;
  numericOnly: boolean;
  onChange: (v: Scalar) => void;
}) {
  const type =
    value === null ? 'null' : typeof value === 'boolean' ? 'boolean' : typeof value === 'number' ? 'number' : 'string';
  const [text, setText] = useState(value === null ? '' : String(value));
  const convert = (t: string, as: string): Scalar | undefined => {
    if (as === 'null') return null;
    if (as === 'boolean') return t === 'true';
    if (as === 'number') return t.trim() !== '' && Number.isFinite(Number(t)) ? Number(t) : undefined;
    return t;
  };
  return (
    <span>
      <select
        aria-label="Value type"
        value={type}
        onChange={(e) => {
          const v = convert(text, e.currentTarget.value);
          onChange(v === undefined ? 0 : v);
        }}
      >
        <option value="string">text</option>
        <option value="number">number</option>
        {!numericOnly && <option value="boolean">true/false</option>}
        {!numericOnly && <option value="null">null</option>}
      </select>
      {type !== 'null' && (
        <input
          aria-label="Value"
          value={type === 'boolean' ? String(value) : text}
          onChange={(e) => {
            setText(e.currentTarget.value);
            const v = convert(e.currentTarget.value, type);
            if (v !== undefined) onChange(v);
          }}
        />
      )}
    </span>
  );
}
