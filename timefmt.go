package gtc

import (
	"errors"
	"time"
)

// Date-times go out with milliseconds and are stored with microseconds.
const (
	APITimeLayout    = "2006-01-02T15:04:05.000Z"
	StoredTimeLayout = "2006-01-02T15:04:05.000000Z"
)

// FormatAPITime formats t for a response body.
func FormatAPITime(t time.Time) string { return t.UTC().Format(APITimeLayout) }

// FormatStoredTime formats t for a stored document.
func FormatStoredTime(t time.Time) string { return t.UTC().Format(StoredTimeLayout) }

var errBadTime = errors.New("must be an RFC 3339 date-time")

// ParseTime reads any RFC 3339 date-time; a value without an offset is UTC. The result is
// in UTC, truncated to microseconds, and its year lies in 0001–9999.
func ParseTime(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		// RFC 3339 needs an offset; the API reads an offset-less value as UTC.
		t, err = time.ParseInLocation("2006-01-02T15:04:05.999999999", s, time.UTC)
		if err != nil {
			return time.Time{}, errBadTime
		}
	}
	t = t.UTC().Truncate(time.Microsecond)
	if t.Year() < 1 || t.Year() > 9999 {
		return time.Time{}, errBadTime
	}
	return t, nil
}
