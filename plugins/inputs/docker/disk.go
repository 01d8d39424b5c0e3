package docker

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/morse-agent/morse"
)

// diskObjects are the objects storage_objects asks about.
type diskObjects struct{ containers, images, volumes bool }

func newDiskObjects(objs []string) diskObjects {
	return diskObjects{containers: slices.Contains(objs, "container"), images: slices.Contains(objs, "image"),
		volumes: slices.Contains(objs, "volume")}
}

func (o diskObjects) any() bool { return o.containers || o.images || o.volumes }

// query is /system/df's query: the types (API 1.42 and later; older daemons answer with
// everything) and verbose, for the lists.
func (o diskObjects) query() string {
	q := "/system/df?verbose=1"
	if o.containers {
		q += "&type=container"
	}
	if o.images {
		q += "&type=image"
	}
	if o.volumes {
		q += "&type=volume"
	}
	return q
}

type dfImage struct {
	ID         string   `json:"Id"`
	RepoTags   []string `json:"RepoTags"`
	Size       int64    `json:"Size"`
	SharedSize int64    `json:"SharedSize"`
}

type dfContainer struct {
	ID         string   `json:"Id"`
	Names      []string `json:"Names"`
	Image      string   `json:"Image"`
	SizeRw     int64    `json:"SizeRw"`
	SizeRootFs int64    `json:"SizeRootFs"`
}

type dfVolume struct {
	Name      string `json:"Name"`
	UsageData *struct {
		Size int64 `json:"Size"`
	} `json:"UsageData"`
}

// diskUsage is GET /system/df in both of its shapes: before API 1.52 the lists and
// LayersSize at the top, from 1.52 on one object per type.
type diskUsage struct {
	LayersSize int64         `json:"LayersSize"`
	Images     []dfImage     `json:"Images"`
	Containers []dfContainer `json:"Containers"`
	Volumes    []dfVolume    `json:"Volumes"`

	ImageUsage *struct {
		TotalSize int64     `json:"TotalSize"`
		Items     []dfImage `json:"Items"`
	} `json:"ImageUsage"`
	ContainerUsage *struct {
		Items []dfContainer `json:"Items"`
	} `json:"ContainerUsage"`
	VolumeUsage *struct {
		Items []dfVolume `json:"Items"`
	} `json:"VolumeUsage"`
}

// normalize moves the newer shape's lists to the older shape's places.
func (du *diskUsage) normalize() {
	if u := du.ImageUsage; u != nil {
		du.LayersSize, du.Images = u.TotalSize, u.Items
	}
	if u := du.ContainerUsage; u != nil {
		du.Containers = u.Items
	}
	if u := du.VolumeUsage; u != nil {
		du.Volumes = u.Items
	}
}

// gatherDiskUsage adds docker_disk_usage: the size of the image layers, and that of each
// container, image and volume that storage_objects names.
func (d *Docker) gatherDiskUsage(ctx context.Context, acc morse.Accumulator) error {
	var du diskUsage
	if err := d.call(ctx, d.disk.query(), &du); err != nil {
		return fmt.Errorf("getting disk usage failed: %w", err)
	}
	du.normalize()
	t := time.Now()
	engine := []morse.Tag{{Key: "engine_host", Value: d.host.host}, {Key: "server_version", Value: d.host.version}}
	add := func(tags []morse.Tag, fields ...morse.Field) {
		acc.AddMetric(morse.NewMetric("docker_disk_usage", tags, fields, t))
	}
	add(engine, morse.Field{Key: "layers_size", Value: morse.Int(du.LayersSize)})
	for _, c := range du.Containers {
		if !d.disk.containers {
			break
		}
		image, version := parseImage(c.Image)
		tags := append(slices.Clone(engine), morse.Tag{Key: "container_name", Value: containerName(c.Names)},
			morse.Tag{Key: "container_image", Value: image}, morse.Tag{Key: "container_version", Value: version})
		if d.SourceTag {
			tags = append(tags, morse.Tag{Key: "source", Value: shortID(c.ID)})
		}
		add(sortTags(tags), morse.Field{Key: "size_root_fs", Value: morse.Int(c.SizeRootFs)},
			morse.Field{Key: "size_rw", Value: morse.Int(c.SizeRw)})
	}
	for _, img := range du.Images {
		if !d.disk.images {
			break
		}
		tags := append(slices.Clone(engine), morse.Tag{Key: "image_id", Value: imageID(img.ID)})
		if len(img.RepoTags) > 0 {
			name, version := parseImage(img.RepoTags[0])
			tags = append(tags, morse.Tag{Key: "image_name", Value: name}, morse.Tag{Key: "image_version", Value: version})
		}
		add(sortTags(tags), morse.Field{Key: "shared_size", Value: morse.Int(img.SharedSize)},
			morse.Field{Key: "size", Value: morse.Int(img.Size)})
	}
	for _, v := range du.Volumes {
		if !d.disk.volumes {
			break
		}
		var size int64
		if v.UsageData != nil {
			size = v.UsageData.Size
		}
		add(sortTags(append(slices.Clone(engine), morse.Tag{Key: "volume_name", Value: v.Name})),
			morse.Field{Key: "size", Value: morse.Int(size)})
	}
	return nil
}

// imageID is the first 12 hex digits of an image ID ("sha256:..."), as Telegraf tags it.
func imageID(id string) string {
	if len(id) >= 19 {
		return id[7:19]
	}
	return id
}
