package cosmos

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	gtc "github.com/gtc-dev/gtc"
)

// containerSpec is one container of the store with its partition key.
type containerSpec struct {
	name  string
	paths []string
	multi bool
	items bool // the ground_truth container: gets itemsIndexingPolicy
}

func (s *Store) containerSpecs() []containerSpec {
	c := s.opts.Containers
	return []containerSpec{
		{name: c.GroundTruth, paths: []string{"/datasetName", "/bucket"}, multi: true, items: true},
		{name: c.Assignments, paths: []string{"/pk"}},
		{name: c.Tags, paths: []string{"/pk"}},
		{name: c.TagDefinitions, paths: []string{"/tag_key"}},
		{name: c.Meta, paths: []string{"/pk"}},
		{name: c.AgentOperations, paths: []string{"/operationId"}},
	}
}

func (cs containerSpec) keyDefinition() azcosmos.PartitionKeyDefinition {
	if cs.multi {
		return azcosmos.PartitionKeyDefinition{Kind: azcosmos.PartitionKeyKindMultiHash, Version: 2, Paths: cs.paths}
	}
	return azcosmos.PartitionKeyDefinition{Kind: azcosmos.PartitionKeyKindHash, Version: 2, Paths: cs.paths}
}

func (cs containerSpec) describe() string {
	d := "[" + strings.Join(cs.paths, ", ") + "]"
	if cs.multi {
		d += " (MultiHash)"
	}
	return d
}

// itemsIndexingPolicy is the ground_truth indexing policy that README.md documents.
func itemsIndexingPolicy() *azcosmos.IndexingPolicy {
	excluded := []azcosmos.ExcludedPath{{Path: `/"_etag"/?`}}
	for _, p := range []string{"history", "toolCalls", "contextEntries", "feedback", "metadata", "plugins", "tracePayload", "expectedTools", "traceIds"} {
		excluded = append(excluded, azcosmos.ExcludedPath{Path: "/" + p + "/*"})
	}
	excluded = append(excluded, azcosmos.ExcludedPath{Path: "/gtcExact/?"}, azcosmos.ExcludedPath{Path: "/gtcRevision/?"})
	return &azcosmos.IndexingPolicy{
		IndexingMode:  azcosmos.IndexingModeConsistent,
		Automatic:     true,
		IncludedPaths: []azcosmos.IncludedPath{{Path: "/*"}},
		ExcludedPaths: excluded,
	}
}

// setup creates what is missing (CreateContainers) and checks every container's partition key.
func (s *Store) setup(ctx context.Context) error {
	if s.opts.CreateContainers {
		if _, err := s.client.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: s.opts.Database}, nil); err != nil && statusOf(err) != http.StatusConflict {
			return s.createErr("database "+s.opts.Database, err)
		}
		for _, cs := range s.containerSpecs() {
			props := azcosmos.ContainerProperties{ID: cs.name, PartitionKeyDefinition: cs.keyDefinition()}
			if cs.items {
				props.IndexingPolicy = itemsIndexingPolicy()
			}
			var o *azcosmos.CreateContainerOptions
			if s.opts.AutoscaleMaxThroughput > 0 {
				tp := azcosmos.NewAutoscaleThroughputProperties(s.opts.AutoscaleMaxThroughput)
				o = &azcosmos.CreateContainerOptions{ThroughputProperties: &tp}
			}
			_, err := s.db.CreateContainer(ctx, props, o)
			switch {
			case err == nil:
				s.log.Info("cosmos: created container", "database", s.opts.Database, "container", cs.name)
			case statusOf(err) == http.StatusConflict:
			default:
				return s.createErr("container "+cs.name, err)
			}
		}
	}
	var missing []string
	for _, cs := range s.containerSpecs() {
		c, err := s.db.NewContainer(cs.name)
		if err != nil {
			return fmt.Errorf("cosmos: open: %w: %w", gtc.ErrInvalidArgument, err)
		}
		resp, err := c.Read(ctx, nil)
		if statusOf(err) == http.StatusNotFound {
			missing = append(missing, cs.name)
			continue
		}
		if err != nil {
			return fmt.Errorf("cosmos: open: reading container %s of database %s at %s: %w", cs.name, s.opts.Database, s.opts.Endpoint, wrapErr("read container", err))
		}
		got := resp.ContainerProperties.PartitionKeyDefinition
		multi := got.Kind == azcosmos.PartitionKeyKindMultiHash
		if !slices.Equal(got.Paths, cs.paths) || (cs.multi && !multi) {
			have := "[" + strings.Join(got.Paths, ", ") + "]"
			if multi {
				have += " (MultiHash)"
			}
			return fmt.Errorf("cosmos: open: %w: container '%s' has partition key %s but gtc needs %s",
				gtc.ErrInvalidArgument, cs.name, have, cs.describe())
		}
	}
	if len(missing) > 0 {
		//lint:ignore ST1005 the sentence is the exact startup message shown in README.md
		return fmt.Errorf("cosmos: open: %w: Cosmos DB container(s) missing in database '%s': %s. Create them, or set GTC_COSMOS_CREATE_CONTAINERS=true.",
			gtc.ErrInvalidArgument, s.opts.Database, strings.Join(missing, ", "))
	}
	return nil
}

func (s *Store) createErr(what string, err error) error {
	if st := statusOf(err); st == http.StatusForbidden || st == http.StatusUnauthorized {
		return fmt.Errorf("cosmos: open: %w: creating %s was refused (%d). Creating databases and containers is a control-plane action that the data-plane role of Entra ID authentication cannot do: create them with infrastructure code, or use key authentication (GTC_COSMOS_KEY) with GTC_COSMOS_CREATE_CONTAINERS=true: %w",
			gtc.ErrUnavailable, what, st, err)
	}
	return fmt.Errorf("cosmos: open: creating %s: %w", what, wrapErr("create", err))
}
