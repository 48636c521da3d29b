package config

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/dustin/go-humanize"
)

// CSV is a comma-separated list: entries trimmed of ASCII whitespace, empties dropped.
type CSV []string

// Decode implements envconfig.Decoder.
func (c *CSV) Decode(v string) error {
	out := CSV{}
	for _, part := range strings.Split(v, ",") {
		if p := strings.Trim(part, " \t\r\n"); p != "" {
			out = append(out, p)
		}
	}
	*c = out
	return nil
}

func (c CSV) String() string { return strings.Join(c, ",") }

// Duration is a Go duration ("30s", "15m") or a plain number of seconds ("30", "1.5"), as
// the reference backend's files write them.
type Duration time.Duration

// Decode implements envconfig.Decoder.
func (d *Duration) Decode(v string) error {
	v = strings.TrimSpace(v)
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		*d = Duration(f * float64(time.Second))
		return nil
	}
	td, err := time.ParseDuration(v)
	if err != nil {
		return fmt.Errorf("expected a duration such as 30s, 15m or 24h, or a number of seconds")
	}
	*d = Duration(td)
	return nil
}

// D returns the value as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

func (d Duration) String() string { return time.Duration(d).String() }

// Age is a retention period: a Go duration ("720h", "90m") or whole days ("30d"); "0" means
// no limit. Unlike Duration, a plain number other than 0 is refused, so "30" cannot be
// taken for 30 seconds.
type Age time.Duration

// Decode implements envconfig.Decoder.
func (a *Age) Decode(v string) error {
	v = strings.TrimSpace(v)
	bad := fmt.Errorf("expected a duration such as 30d or 720h, or 0 for no limit")
	if v == "0" {
		*a = 0
		return nil
	}
	if days, ok := strings.CutSuffix(v, "d"); ok {
		n, err := strconv.ParseUint(days, 10, 16)
		if err != nil {
			return bad
		}
		*a = Age(time.Duration(n) * 24 * time.Hour)
		return nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return bad
	}
	*a = Age(d)
	return nil
}

// D returns the value as a time.Duration.
func (a Age) D() time.Duration { return time.Duration(a) }

// String writes whole days as "30d", else a Go duration; "0" for no limit.
func (a Age) String() string {
	d := time.Duration(a)
	switch {
	case d == 0:
		return "0"
	case d%(24*time.Hour) == 0:
		return strconv.FormatInt(int64(d/(24*time.Hour)), 10) + "d"
	}
	return d.String()
}

// ByteSize is a number of bytes, plain ("1073741824") or with a unit ("256MiB", "1GiB",
// "500MB"; IEC units are powers of 1024, SI units of 1000).
type ByteSize uint64

// Decode implements envconfig.Decoder.
func (b *ByteSize) Decode(v string) error {
	n, err := humanize.ParseBytes(strings.TrimSpace(v))
	if err != nil {
		return fmt.Errorf("expected a size such as 1GiB, 256MiB or a number of bytes")
	}
	*b = ByteSize(n)
	return nil
}

// String writes the exact number of bytes.
func (b ByteSize) String() string { return strconv.FormatUint(uint64(b), 10) }

// Bool accepts true/false/1/0/t/f in any case.
type Bool bool

// Decode implements envconfig.Decoder.
func (b *Bool) Decode(v string) error {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true", "1", "t":
		*b = true
	case "false", "0", "f":
		*b = false
	default:
		return fmt.Errorf("expected true or false")
	}
	return nil
}

func (b Bool) String() string { return strconv.FormatBool(bool(b)) }

// TLSVerify is a TLS verification setting: "true", "false", or the path of a PEM bundle
// added to the system roots. true/false/1/0/t/f are accepted in any case and stored as
// "true" or "false"; anything else is a path, checked by Validate.
type TLSVerify string

// Decode implements envconfig.Decoder.
func (t *TLSVerify) Decode(v string) error {
	v = strings.TrimSpace(v)
	switch strings.ToLower(v) {
	case "true", "1", "t":
		*t = "true"
	case "false", "0", "f":
		*t = "false"
	default:
		*t = TLSVerify(v)
	}
	return nil
}

// Off reports whether certificate verification is turned off.
func (t TLSVerify) Off() bool { return t == "false" }

// Path is the PEM bundle path, or "" for true and false.
func (t TLSVerify) Path() string {
	if t == "" || t == "true" || t == "false" {
		return ""
	}
	return string(t)
}

// values maps every setting name to its effective value, in the form Print shows.
func (c *Config) values() map[string]string {
	names := Names()
	out := make(map[string]string, len(names))
	v := reflect.ValueOf(c).Elem()
	t := v.Type()
	i := 0
	for f := 0; f < t.NumField(); f++ {
		sf := t.Field(f)
		if !sf.IsExported() || sf.Tag.Get("ignored") == "true" {
			continue
		}
		if i >= len(names) {
			break
		}
		out[names[i]] = fmt.Sprint(v.Field(f).Interface())
		i++
	}
	return out
}
