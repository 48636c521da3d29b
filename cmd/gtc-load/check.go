package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"

	"github.com/gtc-dev/gtc/cmd/internal/ledger"
	"github.com/gtc-dev/gtc/cmd/internal/loadkit"
)

// fetchAll reads every key with workers concurrent GETs: found items, 404 as not found.
func fetchAll(c *loadkit.Client, keys []ledger.Key, workers int) (map[ledger.Key]ledger.Current, error) {
	out := make(map[ledger.Key]ledger.Current, len(keys))
	var mu sync.Mutex
	var firstErr error
	next := make(chan ledger.Key)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range next {
				cur, err := fetchOne(c, k)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				out[k] = cur
				mu.Unlock()
			}
		}()
	}
	for _, k := range keys {
		next <- k
	}
	close(next)
	wg.Wait()
	return out, firstErr
}

func fetchOne(c *loadkit.Client, k ledger.Key) (ledger.Current, error) {
	res, data, err := c.Do(http.MethodGet, itemPath("/v1/ground-truths", k), nil, nil)
	if err != nil {
		return ledger.Current{}, fmt.Errorf("read %s: %w", k, err)
	}
	switch res.StatusCode {
	case http.StatusOK:
	case http.StatusNotFound:
		return ledger.Current{}, nil
	default:
		return ledger.Current{}, fmt.Errorf("read %s: %d %.200s", k, res.StatusCode, data)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		return ledger.Current{}, fmt.Errorf("read %s: %w", k, err)
	}
	etag, _ := doc["_etag"].(string)
	return ledger.Current{Found: true, ETag: normETag(etag), Doc: doc}, nil
}
