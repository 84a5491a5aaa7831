import type { Config } from '../config.js';
import type { Store } from '../store/db.js';
import { LogIngestService } from './log-ingest.js';
import { ModuleCategoryService } from './module-categories.js';
import { OrganizationService } from './organizations.js';

/** Everything route code talks to; built once per process from its dependencies. */
export interface Services {
  organizations: OrganizationService;
  categories: ModuleCategoryService;
  ingest: LogIngestService;
  /** Stops background work (pollers, streams) before the database closes. */
  close(): Promise<void>;
}

export function createServices(store: Store, _config: Config): Services {
  return {
    organizations: new OrganizationService(store.db),
    categories: new ModuleCategoryService(store.db),
    ingest: new LogIngestService(store.db),
    close: async () => undefined,
  };
}
