package mqtt

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"text/template"

	"github.com/morse-agent/morse"
)

// homie is the state of layout = "homie-v4" (https://homieiot.github.io/specification/):
// the devices and nodes announced since the connection was made.
type homie struct {
	device, node *template.Template
	seen         map[string]map[string]bool // device topic -> node ids
	order        []string                   // device topics, in the order announced
}

func (h *homie) init(device, node string) error {
	var err error
	if h.device, err = parseTemplate("homie_device_name", device); err != nil {
		return err
	}
	h.node, err = parseTemplate("homie_node_id", node)
	return err
}

// reset forgets what was announced: a new connection announces it again.
func (h *homie) reset() { h.seen, h.order = nil, nil }

// lost are the messages that mark every announced device lost.
func (h *homie) lost() []message {
	out := make([]message, 0, len(h.order))
	for _, topic := range h.order {
		out = append(out, message{topic: topic + "/$state", payload: []byte("lost")})
	}
	return out
}

var homieIDRe = regexp.MustCompile(`[^a-z0-9]+`)

// homieID makes an id of lowercase letters, digits and hyphens, as Homie asks.
func homieID(raw string) string {
	return strings.Trim(homieIDRe.ReplaceAllString(strings.ToLower(raw), "-"), "-")
}

func homieRender(t *template.Template, mt morse.Metric) (string, error) {
	var b strings.Builder
	if err := t.Execute(&b, templateMetric{mt}); err != nil {
		return "", err
	}
	if strings.Contains(b.String(), "/") {
		return "", errors.New("cannot contain /")
	}
	return b.String(), nil
}

// collectHomie announces each new device and node, then publishes every tag and field as a
// property with its $name and $datatype, as Telegraf does.
func (m *MQTT) collectHomie(batch []morse.Metric, d *drops) []message {
	h := &m.homie
	if h.seen == nil {
		h.seen = map[string]map[string]bool{}
	}
	var msgs []message
	for i, mt := range batch {
		topic, err := m.topicOf(mt)
		if err != nil {
			d.add(morse.ReasonPermanent, fmt.Errorf("topic template: %w", err), i)
			continue
		}
		at := []int{i}
		add := func(t, p string) { msgs = append(msgs, message{topic: t, payload: []byte(p), metrics: at}) }
		if h.seen[topic] == nil {
			name, err := homieRender(h.device, mt)
			if err != nil {
				d.add(morse.ReasonPermanent, fmt.Errorf("homie_device_name: %w", err), i)
				continue
			}
			add(topic+"/$homie", "4.0")
			add(topic+"/$name", name)
			add(topic+"/$state", "ready")
			h.seen[topic] = map[string]bool{}
			h.order = append(h.order, topic)
		}
		nodeName, err := homieRender(h.node, mt)
		if err != nil {
			d.add(morse.ReasonPermanent, fmt.Errorf("homie_node_id: %w", err), i)
			continue
		}
		node := homieID(nodeName)
		if !h.seen[topic][node] {
			h.seen[topic][node] = true
			nodes := make([]string, 0, len(h.seen[topic]))
			for id := range h.seen[topic] {
				nodes = append(nodes, id)
			}
			slices.Sort(nodes)
			add(topic+"/$nodes", strings.Join(nodes, ","))
			add(topic+"/"+node+"/$name", nodeName)
		}
		var props []string
		for _, t := range mt.Tags() {
			props = append(props, homieID(t.Key))
		}
		for _, f := range mt.Fields() {
			props = append(props, homieID(f.Key))
		}
		slices.Sort(props)
		path := topic + "/" + node
		add(path+"/$properties", strings.Join(props, ","))
		for _, t := range mt.Tags() {
			id := homieID(t.Key)
			add(path+"/"+id, t.Value)
			add(path+"/"+id+"/$name", t.Key)
			add(path+"/"+id+"/$datatype", "string")
		}
		for _, f := range mt.Fields() {
			id := homieID(f.Key)
			add(path+"/"+id, valueText(f.Value))
			add(path+"/"+id+"/$name", f.Key)
			add(path+"/"+id+"/$datatype", homieType(f.Value))
		}
	}
	return msgs
}

func homieType(v morse.Value) string {
	switch v.Type() {
	case morse.TypeInt, morse.TypeUint:
		return "integer"
	case morse.TypeFloat:
		return "float"
	case morse.TypeBool:
		return "boolean"
	}
	return "string"
}
