package prometheus

import (
	"bufio"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// sample is one sample line of a text exposition.
type sample struct {
	name   string
	labels map[string]string
	value  float64
}

// exposition is a text exposition read line by line, independently of morse's parser:
// each family's type, and the samples.
type exposition struct {
	types   map[string]string
	samples []sample
}

// fetchText GETs url in the text format and reads it.
func fetchText(t *testing.T, url string) *exposition {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	return readText(t, resp.Body)
}

func readText(t *testing.T, r io.Reader) *exposition {
	t.Helper()
	e := &exposition{types: map[string]string{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if f := strings.Fields(line); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			e.types[f[2]] = f[3]
		}
		if line == "" || line[0] == '#' {
			continue
		}
		e.samples = append(e.samples, parseSample(t, line))
	}
	require.NoError(t, sc.Err())
	return e
}

// parseSample reads `name{k="v",...} value [timestamp]`, label values with the format's
// escapes (\\, \" and \n).
func parseSample(t *testing.T, line string) sample {
	t.Helper()
	s := sample{labels: map[string]string{}}
	i := strings.IndexAny(line, "{ ")
	s.name, line = line[:i], line[i:]
	if line[0] == '{' {
		line = line[1:]
		for line[0] != '}' {
			eq := strings.IndexByte(line, '=')
			key := line[:eq]
			line = line[eq+2:] // past ="
			var v strings.Builder
			for line[0] != '"' {
				if line[0] == '\\' {
					line = line[1:]
					if line[0] == 'n' {
						v.WriteByte('\n')
						line = line[1:]
						continue
					}
				}
				v.WriteByte(line[0])
				line = line[1:]
			}
			s.labels[key] = v.String()
			line = strings.TrimPrefix(line[1:], ",")
		}
		line = line[1:]
	}
	fields := strings.Fields(line)
	v, err := strconv.ParseFloat(fields[0], 64)
	require.NoError(t, err, line)
	s.value = v
	return s
}

// family is the family a sample belongs to: its name without _sum, _count or _bucket when
// that names a summary or histogram.
func (e *exposition) family(name string) string {
	for _, suffix := range []string{"_sum", "_count", "_bucket"} {
		if base, ok := strings.CutSuffix(name, suffix); ok {
			if typ := e.types[base]; typ == "summary" || typ == "histogram" {
				return base
			}
		}
	}
	return name
}

// key is a series' name and sorted labels, without the ones in drop.
func key(name string, labels map[string]string, drop ...string) string {
	var parts []string
	for k, v := range labels {
		if !contains(drop, k) {
			parts = append(parts, k+"="+strconv.Quote(v))
		}
	}
	sort.Strings(parts)
	return name + "{" + strings.Join(parts, ",") + "}"
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// shapesV1 is what metric_version 1 makes of the exposition: per family and label set
// (without le or quantile), the field keys, Telegraf's: counter, gauge or value for one
// sample, and for summaries and histograms count, sum and one per quantile or bound.
func (e *exposition) shapesV1() map[string][]string {
	fields := map[string]map[string]bool{}
	for _, s := range e.samples {
		fam := e.family(s.name)
		k := key(fam, s.labels, "le", "quantile")
		if fields[k] == nil {
			fields[k] = map[string]bool{}
		}
		switch typ := e.types[fam]; {
		case typ == "summary" || typ == "histogram":
			switch {
			case s.name == fam+"_sum":
				fields[k]["sum"] = true
			case s.name == fam+"_count":
				fields[k]["count"] = true
			case typ == "summary":
				fields[k][s.labels["quantile"]] = true
			default:
				fields[k][s.labels["le"]] = true
			}
		case typ == "counter" || typ == "gauge":
			fields[k][typ] = true
		default:
			fields[k]["value"] = true
		}
	}
	return sortedSets(fields)
}

func sortedSets(m map[string]map[string]bool) map[string][]string {
	out := map[string][]string{}
	for k, set := range m {
		for f := range set {
			out[k] = append(out[k], f)
		}
		sort.Strings(out[k])
	}
	return out
}
