import type { Caller, Catalog } from '../api.js';
import { formatCount } from '../lib/format.js';
import { visibleText } from '../text.js';
import type { View } from '../view.js';
import { Popover } from './popover.js';

interface Props {
  caller: Caller;
  catalog?: Catalog;
  error?: string;
  view: View;
  /** Events of the last hour per environment, when the page counted them. */
  envCounts?: Map<string, number | undefined>;
  onChange: (patch: Partial<View>) => void;
}

/** What the source button says: the environment, and which of its sources or which deployment resource. */
export function sourceSummary(catalog: Catalog | undefined, view: View): string {
  for (const p of catalog?.projects ?? [])
    for (const e of p.environments) {
      if (e.id !== view.environmentId) continue;
      const name = `${p.name} / ${e.name}`;
      if (view.deploymentResourceId) return `${name} · ${view.deploymentResourceId}`;
      const all = e.moduleInstances.flatMap((m) => m.logSources).length;
      const chosen = view.logSourceKeys.length;
      return chosen === 0 ? `${name} · all sources` : `${name} · ${chosen} of ${all} sources`;
    }
  if (view.logSourceKeys.length > 0) return `${view.logSourceKeys.length} sources`;
  return catalog ? 'Choose sources' : 'Loading sources…';
}

/** Organization, environment, then its module instances' log sources, or one deployment resource: in one panel. */
export function SourcePicker({ caller, catalog, error, view, envCounts, onChange }: Props) {
  const environments = catalog?.projects.flatMap((p) => p.environments.map((e) => ({ ...e, project: p.name }))) ?? [];
  const environment = environments.find((e) => e.id === view.environmentId);
  const resources =
    environment?.moduleInstances.flatMap((m) =>
      m.deploymentResources.filter((r) => r.supported).map((r) => ({ ...r, instance: m.name })),
    ) ?? [];
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
    <Popover
      class="sources"
      label={
        <>
          <span class="button-kind">Sources</span> {visibleText(sourceSummary(catalog, view))}
        </>
      }
    >
      {() => (
        <div class="picker" data-testid="source-panel">
          {caller.organizations.length > 1 && (
            <fieldset>
              <legend>Organization</legend>
              {caller.organizations.map((o) => (
                <label key={o.id}>
                  <input
                    type="radio"
                    name="organization"
                    checked={o.id === view.organizationId}
                    onChange={() =>
                      onChange({
                        organizationId: o.id,
                        environmentId: undefined,
                        logSourceKeys: [],
                        deploymentResourceId: undefined,
                      })
                    }
                  />
                  {visibleText(o.name)}
                </label>
              ))}
            </fieldset>
          )}
          {error && (
            <p class="error" role="alert">
              {error}
            </p>
          )}
          {catalog?.truncated && <p class="hint">This organization is large: only part of it is listed.</p>}
          <fieldset class="environments">
            <legend>Environment</legend>
            {environments.map((e) => {
              const count = envCounts?.get(e.id);
              return (
                <label key={e.id}>
                  <input
                    type="radio"
                    name="environment"
                    checked={e.id === view.environmentId}
                    onChange={() =>
                      onChange({ environmentId: e.id, logSourceKeys: [], deploymentResourceId: undefined })
                    }
                  />
                  {visibleText(e.project)} / {visibleText(e.name)}
                  {count !== undefined && <span class="hint"> {formatCount(count)} in the last hour</span>}
                </label>
              );
            })}
          </fieldset>
          {environment && (
            <fieldset class="instances">
              <legend>
                Sources{' '}
                <span class="hint">
                  {view.logSourceKeys.length === 0 && view.deploymentResourceId === undefined
                    ? '(none ticked: all of them)'
                    : view.deploymentResourceId
                      ? '(a deployment resource is chosen)'
                      : `(${view.logSourceKeys.length} chosen)`}
                </span>
              </legend>
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
            </fieldset>
          )}
          {resources.length > 0 && (
            <fieldset class="resources">
              <legend>Deployment resource</legend>
              <label>
                <input
                  type="radio"
                  name="resource"
                  checked={view.deploymentResourceId === undefined}
                  onChange={() => onChange({ deploymentResourceId: undefined })}
                />
                None (use the sources)
              </label>
              {resources.map((r) => (
                <label key={r.id}>
                  <input
                    type="radio"
                    name="resource"
                    checked={view.deploymentResourceId === r.id}
                    onChange={() => onChange({ deploymentResourceId: r.id, logSourceKeys: [] })}
                  />
                  {visibleText(`${r.instance}: ${r.type} ${r.id}`)}
                </label>
              ))}
            </fieldset>
          )}
        </div>
      )}
    </Popover>
  );
}
