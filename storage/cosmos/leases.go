package cosmos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/gtc-dev/gtc"
)

// Leases live in the meta container, one document each: partition key "lease:" and the
// SHA-256 of the name in hex, id "lease", the name itself in the document. A name carries
// user ids and tags of any characters and up to gtc.MaxLeaseNameBytes, which a partition key
// travelling in an HTTP header should not. Every write is conditional on the document's ETag
// (or is a create), so two servers never both hold a lease; expiry is judged by the clock of
// the server that reads.

const leaseID = "lease"

type leaseDoc struct {
	ID      string `json:"id"`
	PK      string `json:"pk"`
	Kind    string `json:"kind"`
	Name    string `json:"name"`
	Holder  string `json:"holder"`
	Expires string `json:"expires"`
	ETag    string `json:"_etag,omitempty"`
}

func leasePK(name string) string { return "lease:" + digest(name) }

// leaseStore implements gtc.LeaseStore.
type leaseStore struct{ s *Store }

var _ gtc.LeaseStore = leaseStore{}

// Leases returns the store's leases.
func (s *Store) Leases() gtc.LeaseStore { return leaseStore{s} }

func (l leaseStore) now() time.Time { return l.s.clock.Now().UTC().Truncate(time.Microsecond) }

func (d leaseDoc) lease(etag string) (gtc.Lease, error) {
	t, err := time.Parse(gtc.StoredTimeLayout, d.Expires)
	if err != nil {
		return gtc.Lease{}, fmt.Errorf("cosmos: lease %s: %w: expiry %q: %w", d.Name, gtc.ErrUnavailable, d.Expires, err)
	}
	return gtc.Lease{Name: d.Name, Holder: d.Holder, Expires: t.UTC(), ETag: etag}, nil
}

func newLeaseDoc(name, holder string, expires time.Time) []byte {
	b, _ := json.Marshal(leaseDoc{ID: leaseID, PK: leasePK(name), Kind: "lease", Name: name, Holder: holder,
		Expires: gtc.FormatStoredTime(expires)}) // strings cannot fail
	return b
}

func (l leaseStore) Get(ctx context.Context, name string) (gtc.Lease, error) {
	resp, err := l.s.meta.ReadItem(ctx, azcosmos.NewPartitionKeyString(leasePK(name)), leaseID, nil)
	if err != nil {
		return gtc.Lease{}, wrapErr("read lease "+name, err)
	}
	var d leaseDoc
	if err := json.Unmarshal(resp.Value, &d); err != nil {
		return gtc.Lease{}, fmt.Errorf("cosmos: lease %s: %w: %w", name, gtc.ErrUnavailable, err)
	}
	if d.Name != name {
		return gtc.Lease{}, fmt.Errorf("cosmos: lease %s: %w: its document names %q", name, gtc.ErrUnavailable, d.Name)
	}
	return d.lease(string(resp.ETag))
}

func (l leaseStore) Acquire(ctx context.Context, name, holder string, ttl time.Duration) (gtc.Lease, error) {
	if err := gtc.CheckLease(name, holder, ttl); err != nil {
		return gtc.Lease{}, fmt.Errorf("cosmos: acquire lease: %w", err)
	}
	const op = "acquire lease"
	pk := azcosmos.NewPartitionKeyString(leasePK(name))
	var out gtc.Lease
	err := retryConditional(ctx, op, func() error {
		cur, err := l.Get(ctx, name)
		now := l.now()
		expires := now.Add(ttl)
		switch {
		case errors.Is(err, gtc.ErrNotFound):
			resp, err := l.s.meta.CreateItem(ctx, pk, newLeaseDoc(name, holder, expires), nil)
			if err != nil {
				return wrapErr(op, raced(err))
			}
			out = gtc.Lease{Name: name, Holder: holder, Expires: expires, ETag: string(resp.ETag)}
			return nil
		case err != nil:
			return err
		case cur.Holder != holder && cur.LiveAt(now):
			return fmt.Errorf("cosmos: %s: %w", op, &gtc.LeaseHeldError{Lease: cur})
		}
		resp, err := l.s.meta.ReplaceItem(ctx, pk, leaseID, newLeaseDoc(name, holder, expires),
			&azcosmos.ItemOptions{IfMatchEtag: etagPtr(cur.ETag)})
		if statusOf(err) == http.StatusNotFound {
			return errRace // released meanwhile: create it
		}
		if err != nil {
			return wrapErr(op, raced(err))
		}
		out = gtc.Lease{Name: name, Holder: holder, Expires: expires, ETag: string(resp.ETag)}
		return nil
	})
	return out, err
}

func (l leaseStore) Renew(ctx context.Context, lease gtc.Lease, ttl time.Duration) (gtc.Lease, error) {
	if err := gtc.CheckLease(lease.Name, lease.Holder, ttl); err != nil {
		return gtc.Lease{}, fmt.Errorf("cosmos: renew lease: %w", err)
	}
	expires := l.now().Add(ttl)
	resp, err := l.s.meta.ReplaceItem(ctx, azcosmos.NewPartitionKeyString(leasePK(lease.Name)), leaseID,
		newLeaseDoc(lease.Name, lease.Holder, expires), &azcosmos.ItemOptions{IfMatchEtag: etagPtr(lease.ETag)})
	if err != nil {
		return gtc.Lease{}, wrapErr("renew lease "+lease.Name, err)
	}
	return gtc.Lease{Name: lease.Name, Holder: lease.Holder, Expires: expires, ETag: string(resp.ETag)}, nil
}

func (l leaseStore) Release(ctx context.Context, lease gtc.Lease) error {
	_, err := l.s.meta.DeleteItem(ctx, azcosmos.NewPartitionKeyString(leasePK(lease.Name)), leaseID,
		&azcosmos.ItemOptions{IfMatchEtag: etagPtr(lease.ETag)})
	if st := statusOf(err); st == http.StatusNotFound || st == http.StatusPreconditionFailed {
		return nil // gone, or taken by another after it expired
	}
	return wrapErr("release lease "+lease.Name, err)
}
