// Package metricstest reads a running process's /metrics with the Prometheus text
// parser, as a scraper does, for tests.
package metricstest

import (
	"net/http"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Families is one scrape, by family name.
type Families map[string]*dto.MetricFamily

// Scrape GETs url (with the bearer token when not empty) and parses the text format; it
// fails the test on anything but a 200 in the text format.
func Scrape(t testing.TB, url, token string) Families {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The text format, as Prometheus asks for when it does not negotiate protobuf.
	req.Header.Set("Accept", "text/plain; version=0.0.4")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d", url, resp.StatusCode)
	}
	if ct := resp.Header.Get("Content-Type"); expfmt.ResponseFormat(resp.Header).FormatType() != expfmt.TypeTextPlain {
		t.Fatalf("GET %s: Content-Type %q, want the text format", url, ct)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse %s: %v", url, err)
	}
	return fams
}

// Value sums the samples of family name whose labels include every pair of want
// (counters, gauges, and the sample counts of histograms); it is 0 when none match.
func (f Families) Value(name string, want map[string]string) float64 {
	fam, ok := f[name]
	if !ok {
		return 0
	}
	var sum float64
	for _, m := range fam.GetMetric() {
		if !matches(m, want) {
			continue
		}
		switch {
		case m.Counter != nil:
			sum += m.GetCounter().GetValue()
		case m.Gauge != nil:
			sum += m.GetGauge().GetValue()
		case m.Histogram != nil:
			sum += float64(m.GetHistogram().GetSampleCount())
		case m.Untyped != nil:
			sum += m.GetUntyped().GetValue()
		}
	}
	return sum
}

// LabelValues lists every label value in the scrape, with the family and label name it
// belongs to, for checks that no value names what must not be a label.
func (f Families) LabelValues() []Label {
	var out []Label
	for name, fam := range f {
		for _, m := range fam.GetMetric() {
			for _, l := range m.GetLabel() {
				out = append(out, Label{Family: name, Name: l.GetName(), Value: l.GetValue()})
			}
		}
	}
	return out
}

// Label is one label of one sample.
type Label struct{ Family, Name, Value string }

func matches(m *dto.Metric, want map[string]string) bool {
	n := 0
	for _, l := range m.GetLabel() {
		if v, ok := want[l.GetName()]; ok {
			if v != l.GetValue() {
				return false
			}
			n++
		}
	}
	return n == len(want)
}
