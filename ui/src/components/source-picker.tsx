import type { Caller, Catalog } from '../api.js';
import { visibleText } from '../text.js';
import type { View } from '../view.js';

interface Props {
  caller: Caller;
  catalog?: Catalog;
  error?: string;
  view: View;
  onChange: (patch: Partial<View>) => void;
}

/** Organization, environment, then its module instances' log sources, or one deployment resource. */
export function SourcePicker({ caller, catalog, error, view, onChange }: Props) {
  const environments = catalog?.projects.flatMap((p) => p.environments.map((e) => ({ ...e, project: p.name }))) ?? [];
  const environment = environments.find((e) => e.id === view.environmentId);
  const resources = environment?.moduleInstances.flatMap((m) =>
    m.deploymentResources.filter((r) => r.supported).map((r) => ({ ...r, instance: m.name })),
  );
  const selected = new Set(view.logSourceKeys);
  const toggle = (keys: string[], on: boolean) => {
    const next = new Set(selected);
    for (const k of keys) {
      if (on) next.add(k);
      else next.delete(k);
    }
    onChange({ logSourceKeys: [...next], deploymentResourceId: undefined });
  };

  return (
    <fieldset class="picker">
      <legend>Sources</legend>
      <label>
        Organization
        <select
          value={view.organizationId ?? ''}
          onChange={(e) =>
            onChange({
              organizationId: e.currentTarget.value,
              environmentId: undefined,
              logSourceKeys: [],
              deploymentResourceId: undefined,
            })
          }
        >
          {caller.organizations.map((o) => (
            <option key={o.id} value={o.id}>
              {visibleText(o.name)}
            </option>
          ))}
        </select>
      </label>
      <label>
        Environment
        <select
          value={view.environmentId ?? ''}
          onChange={(e) =>
            onChange({
              environmentId: e.currentTarget.value || undefined,
              logSourceKeys: [],
              deploymentResourceId: undefined,
            })
          }
        >
          <option value="">Choose…</option>
          {environments.map((e) => (
            <option key={e.id} value={e.id}>
              {visibleText(e.project)} / {visibleText(e.name)}
            </option>
          ))}
        </select>
      </label>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {catalog?.truncated && <p class="hint">This organization is large: only part of it is listed.</p>}
      {environment && (
        <details class="instances" open>
          <summary>
            Module instances{' '}
            {view.logSourceKeys.length === 0 && view.deploymentResourceId === undefined
              ? '(all sources)'
              : `(${view.deploymentResourceId ? 'a deployment resource' : `${view.logSourceKeys.length} chosen`})`}
          </summary>
          <ul>
            {environment.moduleInstances.map((m) => {
              const keys = m.logSources.map((s) => s.key);
              const all = keys.length > 0 && keys.every((k) => selected.has(k));
              return (
                <li key={m.id}>
                  <label>
                    <input
                      type="checkbox"
                      checked={all}
                      disabled={keys.length === 0}
                      onChange={(e) => toggle(keys, e.currentTarget.checked)}
                    />
                    {visibleText(m.name)}
                  </label>
                  <ul>
                    {m.logSources.map((s) => (
                      <li key={s.key}>
                        <label title={visibleText(`${s.cloudAccountId} · ${s.region}`)}>
                          <input
                            type="checkbox"
                            checked={selected.has(s.key)}
                            onChange={(e) => toggle([s.key], e.currentTarget.checked)}
                          />
                          {visibleText(s.logGroup)}
                          {s.logStreamPrefix ? ` (${visibleText(s.logStreamPrefix)}…)` : ''}
                        </label>
                      </li>
                    ))}
                  </ul>
                </li>
              );
            })}
          </ul>
        </details>
      )}
      {resources && resources.length > 0 && (
        <label>
          Deployment resource
          <select
            value={view.deploymentResourceId ?? ''}
            onChange={(e) => onChange({ deploymentResourceId: e.currentTarget.value || undefined, logSourceKeys: [] })}
          >
            <option value="">None (use the sources)</option>
            {resources.map((r) => (
              <option key={r.id} value={r.id}>
                {visibleText(`${r.instance}: ${r.type} ${r.id}`)}
              </option>
            ))}
          </select>
        </label>
      )}
    </fieldset>
  );
}
