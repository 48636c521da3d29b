package config

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"
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
