package main

import (
	"context"
	"time"

	"github.com/gtc-dev/gtc/agenttools"
	"github.com/gtc-dev/gtc/api"
	"github.com/gtc-dev/gtc/api/agent"
	"github.com/gtc-dev/gtc/export"
)

// agentTools builds the agent tool endpoint: the read tools (compare_releases over the
// exporter x), the bulk tag operations with their audit log in the store, and the registry
// the HTTP routes and the MCP server share. It repairs operations a crash left running
// before anything is served.
func (a *app) agentTools(ctx context.Context, x *export.Exporter) (*agent.Tools, *agenttools.Bulk, error) {
	cfg := a.cfg
	known := a.curator.Vocabulary().KnownTags
	reads := agenttools.NewReads(agenttools.ReadsDeps{Store: a.store, Curator: a.curator, Registry: a.tagger.Registry(), Known: known,
		Releases: x, Timeout: cfg.AgentToolTimeout.D(), Logger: a.log})
	bulk := agenttools.NewBulk(agenttools.BulkDeps{Items: a.store.Items(), Saver: a.curator, Audit: a.store.AgentOperations(),
		Leases: a.store.Leases(), Previews: a.store.AgentPreviews(), Pipeline: a.tagger, Known: known, Clock: a.clock, Log: a.log}, agenttools.BulkOptions{
		MaxItems: cfg.AgentMaxItems, PreviewTTL: cfg.AgentPreviewTTL.D(), CacheSize: cfg.AgentPreviewCacheSize,
		CacheItems: cfg.AgentPreviewCacheItems, PerUser: cfg.AgentPreviewsPerUser, WritesPerSecond: cfg.AgentWritesPerSecond,
		MaxConcurrentOps: cfg.AgentMaxConcurrentOps, WriteRetries: cfg.AgentWriteRetries, ToolTimeout: cfg.AgentToolTimeout.D(),
		ExecWait: cfg.AgentExecWait.D(), WriteRoles: lower(cfg.AgentWriteRoles), LeaseTTL: cfg.AgentLeaseTTL.D(),
	})
	if n, err := bulk.Repair(ctx); err != nil {
		return nil, nil, fatal(err)
	} else if n > 0 {
		a.log.Warn("agent operations left running by a server that is gone were marked interrupted", "count", n)
	}
	handlers := map[string]agent.Handler{
		"manage_tags":         bulk.ManageTags,
		"undo_tag_operation":  bulk.UndoTagOperation,
		"list_tag_operations": bulk.ListTagOperations,
		"tag_stats":           readTool(reads.TagStats),
		"dataset_stats":       readTool(reads.DatasetStats),
		"search_items":        readTool(reads.SearchItems),
		"get_item":            readTool(reads.GetItem),
		"get_item_history":    readTool(reads.GetItemHistory),
		"compare_releases":    readTool(reads.CompareReleases),
	}
	opts := agent.Options{Version: version, ResolveCaller: api.CallerResolver(serverOptions(cfg).Auth),
		Authorize: api.AuthorizeTool, Log: a.log}
	if a.metrics != nil {
		opts.Observe = a.metrics.agentOperation
	}
	tools, err := agent.New(handlers, opts)
	if err != nil {
		return nil, nil, fatal(err)
	}
	return tools, bulk, nil
}

// readTool adapts a read tool, which needs no caller, to the handler signature.
func readTool(f func(context.Context, map[string]any) agenttools.ToolResult) agent.Handler {
	return func(ctx context.Context, _ agenttools.ToolCall, args map[string]any) agenttools.ToolResult {
		return f(ctx, args)
	}
}

// hourly runs fn now and then every hour until ctx ends.
func hourly(ctx context.Context, fn func()) {
	fn()
	every(ctx, time.Hour, fn)
}

// every runs fn every d, the first time after d, until ctx ends.
func every(ctx context.Context, d time.Duration, fn func()) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(d):
		}
		fn()
	}
}

// repairAgentOperations marks interrupted, every GTC_AGENT_LEASE_TTL until ctx ends, the
// agent operations whose server stopped renewing their locks: another replica killed in the
// middle of an execution. The first repair ran at startup (agentTools).
func (a *app) repairAgentOperations(ctx context.Context, bulk *agenttools.Bulk) {
	every(ctx, a.cfg.AgentLeaseTTL.D(), func() {
		if n, err := bulk.Repair(ctx); err != nil && ctx.Err() == nil {
			a.log.Warn("repairing agent operations failed", "err", err)
		} else if n > 0 {
			a.log.Warn("agent operations left running by a server that is gone were marked interrupted", "count", n)
		}
	})
}

// retainAgentOperations deletes audit entries past GTC_AGENT_AUDIT_RETENTION_DAYS at
// startup and then hourly, until ctx ends.
func (a *app) retainAgentOperations(ctx context.Context, bulk *agenttools.Bulk) {
	days := a.cfg.AgentAuditRetentionDays
	if days <= 0 {
		return
	}
	hourly(ctx, func() {
		if n, err := bulk.Retain(ctx, days); err != nil {
			a.log.Warn("agent audit retention failed", "err", err)
		} else if n > 0 {
			a.log.Info("agent audit entries past retention deleted", "count", n, "retention_days", days)
		}
	})
}
