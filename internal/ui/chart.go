package ui

import (
	"fmt"
	"strings"
	"time"

	"wharf/internal/persistence"
)

// chartHours is the span of the dashboard's chart: the current hour and the 23 before.
const chartHours = 24

// chartSeries groups statuses into the chart's colours, few enough to tell apart; each
// bar's title still names every status in it.
type chartSeries struct {
	Class    string // chart-<Class> in app.css
	Label    string
	Statuses []persistence.MessageStatus
}

var chartSeriesList = []chartSeries{
	{"delivered", "Delivered", []persistence.MessageStatus{persistence.StatusDelivered}},
	{"active", "In progress", []persistence.MessageStatus{persistence.StatusReceived, persistence.StatusInProgress, persistence.StatusAwaitingReceipt}},
	{"waiting", "Waiting", []persistence.MessageStatus{persistence.StatusRetrying, persistence.StatusHeld}},
	{"problem", "Problems", []persistence.MessageStatus{persistence.StatusError, persistence.StatusStalled, persistence.StatusRefused, persistence.StatusNotRouted}},
	{"skipped", "Skipped", []persistence.MessageStatus{persistence.StatusSkipped}},
}

// Chart geometry in SVG user units; the SVG scales to its container.
const (
	chartBarW   = 20
	chartGap    = 4
	chartLeft   = 40 // room for the y labels
	chartTop    = 10
	chartPlotH  = 150
	chartBottom = 24                                    // room for the x labels
	chartWidth  = chartLeft + chartHours*chartBarW + 20 // room for half of the last x label
	chartHeight = chartTop + chartPlotH + chartBottom
	chartBase   = chartTop + chartPlotH // the y of zero
)

// chart is the dashboard's messages-per-hour chart, laid out for the SVG template.
type chart struct {
	Width, Height int
	Base, Left    int // the x axis's y and the y axis's x
	Right         int
	Bars          []chartBar
	Labels        []chartLabel
	Legend        []chartLegend
	Total, Max    int
	Desc          string // the text alternative: what the chart shows in words
}

type chartBar struct {
	X, Y, W, H int
	Class      string
	Title      string
}

type chartLabel struct {
	X, Y   int
	Anchor string // start, middle or end
	Text   string
}

type chartLegend struct {
	Class, Label string
	Count        int
}

// hourlyChart lays out stacked bars, one per hour from first, one segment per series
// with messages, scaled to the busiest hour.
func hourlyChart(first time.Time, counts []persistence.HourCount) chart {
	seriesOf := map[persistence.MessageStatus]int{}
	for i, cs := range chartSeriesList {
		for _, st := range cs.Statuses {
			seriesOf[st] = i
		}
	}
	// perHour[h][series][status] = count
	type cell map[persistence.MessageStatus]int
	perHour := make([][]cell, chartHours)
	totals := make([]int, chartHours)
	legend := make([]int, len(chartSeriesList))
	for _, c := range counts {
		h := int(c.Hour.Sub(first) / time.Hour)
		si, ok := seriesOf[c.Status]
		if h < 0 || h >= chartHours || !ok {
			continue
		}
		if perHour[h] == nil {
			perHour[h] = make([]cell, len(chartSeriesList))
		}
		if perHour[h][si] == nil {
			perHour[h][si] = cell{}
		}
		perHour[h][si][c.Status] += c.Count
		totals[h] += c.Count
		legend[si] += c.Count
	}
	ch := chart{Width: chartWidth, Height: chartHeight, Base: chartBase, Left: chartLeft, Right: chartWidth - 4}
	busiest := 0
	for h, t := range totals {
		ch.Total += t
		if t > ch.Max {
			ch.Max, busiest = t, h
		}
	}
	scale := func(n int) int {
		if ch.Max == 0 {
			return 0
		}
		return (n*chartPlotH + ch.Max/2) / ch.Max
	}
	for h := range chartHours {
		start := first.Add(time.Duration(h) * time.Hour)
		x := chartLeft + h*chartBarW + chartGap/2
		cum := 0
		for si, cs := range chartSeriesList {
			if perHour[h] == nil || perHour[h][si] == nil {
				continue
			}
			n, parts := 0, []string{}
			for _, st := range cs.Statuses {
				if k := perHour[h][si][st]; k > 0 {
					n += k
					parts = append(parts, fmt.Sprintf("%s %d", strings.ReplaceAll(string(st), "_", " "), k))
				}
			}
			y0, y1 := chartBase-scale(cum), chartBase-scale(cum+n)
			cum += n
			if y0-y1 < 1 {
				y1 = y0 - 1 // a segment with messages never vanishes
			}
			ch.Bars = append(ch.Bars, chartBar{X: x, Y: y1, W: chartBarW - chartGap, H: y0 - y1, Class: cs.Class,
				Title: fmt.Sprintf("%s–%s UTC: %s %d (%s)", start.Format("15:04"), start.Add(time.Hour).Format("15:04"),
					cs.Label, n, strings.Join(parts, ", "))})
		}
		if h%6 == 0 || h == chartHours-1 {
			ch.Labels = append(ch.Labels, chartLabel{X: x + (chartBarW-chartGap)/2, Y: chartHeight - 6, Anchor: "middle",
				Text: start.Format("15:04")})
		}
	}
	ch.Labels = append(ch.Labels,
		chartLabel{X: chartLeft - 6, Y: chartBase, Anchor: "end", Text: "0"},
		chartLabel{X: chartLeft - 6, Y: chartTop + 10, Anchor: "end", Text: fmt.Sprint(ch.Max)})
	for si, cs := range chartSeriesList {
		ch.Legend = append(ch.Legend, chartLegend{Class: cs.Class, Label: cs.Label, Count: legend[si]})
	}
	if ch.Total == 0 {
		ch.Desc = "No messages were received in the last 24 hours."
	} else {
		peak := first.Add(time.Duration(busiest) * time.Hour)
		var parts []string
		for _, l := range ch.Legend {
			if l.Count > 0 {
				parts = append(parts, fmt.Sprintf("%s %d", strings.ToLower(l.Label), l.Count))
			}
		}
		ch.Desc = fmt.Sprintf("%d messages in the last 24 hours (%s); the busiest hour was %s UTC with %d.",
			ch.Total, strings.Join(parts, ", "), peak.Format("15:04"), ch.Max)
	}
	return ch
}
