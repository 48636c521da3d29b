package export

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/gtc-dev/gtc"
)

// Feature is one column of a formatter's files as a dataset card describes it: a Hugging Face
// `datasets` feature with a value type (dtype) or a list of values (sequence).
type Feature struct {
	Name     string
	Dtype    string // "string", "int64", "float64", "bool"
	Sequence bool   // a list of Dtype values
}

// FeatureLister is implemented by formatters whose files have a fixed set of columns, which a
// dataset card lists.
type FeatureLister interface {
	Features(h Header) []Feature
}

// cardLoaders are the formats a dataset card points its loaders at, by preference, with the
// `datasets` builder that reads each.
var cardLoaders = []struct{ format, builder string }{
	{"parquet", "parquet"}, {"jsonl", "json"}, {"csv", "csv"}, {"json_items", "json"},
}

// writeCard writes the release's dataset card, README.md: a YAML header in the form the
// Hugging Face Hub reads (configs with each split's data file, the features, the split
// sizes), then what the release holds and how to load it.
func (x *Exporter) writeCard(ctx context.Context, rp *ReleasePlan, dir string, info ReleaseInfo, counts *releaseCounts, files []FileEntry) (FileEntry, error) {
	var loader Formatter
	builder := ""
	for _, l := range cardLoaders {
		if i := slices.IndexFunc(rp.formats, func(f Formatter) bool { return f.Name() == l.format }); i >= 0 {
			loader, builder = rp.formats[i], l.builder
			break
		}
	}
	q := func(s string) string { b, _ := jsontext.AppendQuote(nil, s); return string(b) }
	var b bytes.Buffer
	b.WriteString("---\n")
	fmt.Fprintf(&b, "pretty_name: %s\n", q(rp.Name))
	if loader != nil {
		b.WriteString("configs:\n- config_name: default\n  data_files:\n")
		for _, s := range rp.splits {
			fmt.Fprintf(&b, "  - split: %s\n    path: %s\n", s.Name, q(s.Name+"."+loader.Extension()))
		}
	}
	b.WriteString("dataset_info:\n")
	if fl, ok := loader.(FeatureLister); ok {
		b.WriteString("  features:\n")
		for _, f := range fl.Features(x.header(rp.plan, Result{})) {
			fmt.Fprintf(&b, "  - name: %s\n", q(f.Name))
			if f.Sequence {
				fmt.Fprintf(&b, "    sequence: %s\n", f.Dtype)
			} else {
				fmt.Fprintf(&b, "    dtype: %s\n", f.Dtype)
			}
		}
	}
	b.WriteString("  splits:\n")
	for _, s := range rp.splits {
		fmt.Fprintf(&b, "  - name: %s\n    num_examples: %d\n", s.Name, counts.splits[s.Name])
	}
	b.WriteString("---\n\n")

	fmt.Fprintf(&b, "# %s\n\n", rp.Name)
	if strings.TrimSpace(rp.notes) != "" {
		b.WriteString(strings.TrimSpace(rp.notes) + "\n\n")
	}
	fmt.Fprintf(&b, "A release of ground-truth items made with gtc by %s: %d items, each pinned at its revision "+
		"(`manifest.json` lists them with the SHA-256 of their exported content). Content hash: `%s`.\n\n",
		rp.plan.Actor, info.Count, info.ContentHash)
	b.WriteString("| Split | Items |\n|---|---|\n")
	for _, s := range rp.splits {
		fmt.Fprintf(&b, "| %s | %d |\n", s.Name, counts.splits[s.Name])
	}
	b.WriteString("\n| File | Records | Bytes | SHA-256 |\n|---|---|---|---|\n")
	for _, f := range files {
		fmt.Fprintf(&b, "| %s | %d | %d | `%s` |\n", f.Name, f.Items, f.Bytes, f.SHA256)
	}
	if loader != nil {
		first := rp.splits[0].Name + "." + loader.Extension()
		var spec []string
		for _, s := range rp.splits {
			spec = append(spec, fmt.Sprintf("%q: %q", s.Name, s.Name+"."+loader.Extension()))
		}
		b.WriteString("\n## Loading\n\n```python\nfrom datasets import load_dataset\n")
		fmt.Fprintf(&b, "ds = load_dataset(%q, data_files={%s})\n", builder, strings.Join(spec, ", "))
		if loader.Name() == "parquet" {
			fmt.Fprintf(&b, "\nimport pandas as pd\ndf = pd.read_parquet(%q)\n", first)
			b.WriteString("```\n\n```sql\n")
			fmt.Fprintf(&b, "SELECT * FROM read_parquet('%s');  -- DuckDB\n", first)
		}
		b.WriteString("```\n")
	}

	key := dir + "/" + cardName
	info2, err := x.artifacts.Put(ctx, key, bytes.NewReader(b.Bytes()), gtc.PutOptions{ContentType: gtc.ContentTypeMarkdown})
	if err != nil {
		return FileEntry{}, err
	}
	sum := sha256.Sum256(b.Bytes())
	hexSum := hex.EncodeToString(sum[:])
	if err := checkPut(info2, int64(b.Len()), hexSum); err != nil {
		return FileEntry{}, err
	}
	return FileEntry{Name: cardName, Bytes: int64(b.Len()), SHA256: hexSum, ContentType: gtc.ContentTypeMarkdown}, nil
}
