import { TOOLS } from '../../app/tools';
import type { AnyToolModule } from '../../lib/tools/tool-module';

/**
 * The example's send_email under another name, declared long-running: a task-taking client's call of it is
 * handed off to the completer (`InvokeOptions.handOff`). Served beside the example's tools
 * (`startTestApi({ tools: [...TOOLS, longRunningEmail(name)] })`).
 */
export function longRunningEmail(name: string): AnyToolModule {
  const module = TOOLS.find((tool) => tool.name === 'send_email') as AnyToolModule;
  return {
    ...module,
    name,
    longRunning: true,
    bind(services: unknown) {
      return { ...module.bind(services), name, longRunning: true };
    },
  };
}
