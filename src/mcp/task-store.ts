/**
 * MCP tasks backed by Writ invocations: the task id IS the invocation id, and every task answer is
 * read from the store, so a task survives the session, the connection and the server process
 * (unlike the SDK's in-memory task store). Tasks are the caller principal's invocations in the
 * caller's scope; the session id plays no part.
 */
import type { TaskStore } from "@modelcontextprotocol/sdk/experimental/tasks/interfaces.js";
import { ErrorCode, McpError, type Result, type Task } from "@modelcontextprotocol/sdk/types.js";
import { WritError, errorMessage } from "../core/errors.js";
import type { Invocation } from "../core/types.js";
import type { Host } from "../host/host.js";
import type { GatewayReads, ResolvedGatewayOptions } from "./gateway.js";
import type { McpCaller } from "./principal.js";
import { taskStatusOf } from "./results.js";

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

export function createInvocationTaskStore(host: Host, caller: McpCaller, reads: GatewayReads, o: ResolvedGatewayOptions): TaskStore {
  async function taskOf(inv: Invocation): Promise<Task> {
    const { status, statusMessage } = taskStatusOf(inv, await reads.extras(inv));
    // ttl null: the invocation is durable; it is not cleaned up behind the client's back.
    return { taskId: inv.invocationId, status, ttl: null, createdAt: iso(inv.createdAt), lastUpdatedAt: iso(inv.updatedAt), pollInterval: o.taskPollIntervalMs, statusMessage };
  }
  async function mustOwn(taskId: string): Promise<Invocation> {
    const inv = await reads.own(taskId);
    if (!inv) throw new McpError(ErrorCode.InvalidParams, `Task not found: ${String(taskId).slice(0, 200)}`);
    return inv;
  }
  return {
    async createTask(params) {
      const id = (params.context as { invocationId?: unknown } | undefined)?.invocationId;
      if (typeof id !== "string") throw new McpError(ErrorCode.InternalError, "a Writ task is created for an invocation");
      return taskOf(await mustOwn(id));
    },
    async getTask(taskId) {
      const inv = await reads.own(taskId);
      return inv ? taskOf(inv) : null;
    },
    async storeTaskResult() {
      // Results are read from the invocation; nothing to store.
    },
    async getTaskResult(taskId): Promise<Result> {
      return (await reads.answer(await mustOwn(taskId)));
    },
    async updateTaskStatus(taskId, status) {
      if (status !== "cancelled") return;
      try {
        await host.cancel(caller.scope, taskId, caller.principal);
      } catch (e) {
        if (e instanceof WritError && (e.code === "INVALID_STATE" || e.code === "STEPS_STARTED" || e.code === "NOT_FOUND")) throw new McpError(ErrorCode.InvalidParams, `Cannot cancel: ${e.message}`);
        o.logger.error({ err: errorMessage(e), taskId }, "MCP: cancelling a task failed");
        throw new McpError(ErrorCode.InternalError, "Writ could not cancel the task (a server fault, logged)");
      }
    },
    async listTasks(cursor) {
      const page = 50;
      const invs = await host.list(caller.scope, { limit: page + 1, ...(cursor ? { after: cursor } : {}) });
      const more = invs.length > page;
      const slice = invs.slice(0, page);
      const tasks: Task[] = [];
      for (const inv of slice) if (inv.request.actor.type === caller.principal.type && inv.request.actor.id === caller.principal.id) tasks.push(await taskOf(inv));
      return { tasks, ...(more ? { nextCursor: slice[slice.length - 1]!.invocationId } : {}) };
    },
  };
}
