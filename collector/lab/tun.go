package lab

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// tunDevice is the path of the TUN clone device.
const tunDevice = "/dev/net/tun"

// openTUN creates the TUN device name in the namespace and returns its file,
// non-blocking so that reads go through Go's poller and Close ends them. The
// device carries bare IP packets (IFF_NO_PI) and lives as long as the file:
// closing it removes the device.
func openTUN(ns Namespace, name string) (*os.File, error) {
	var f *os.File
	err := ns.Do(func() error {
		fd, err := unix.Open(tunDevice, unix.O_RDWR|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
		if err != nil {
			return fmt.Errorf("opening %s: %w", tunDevice, err)
		}
		ifr, err := unix.NewIfreq(name)
		if err != nil {
			unix.Close(fd)
			return fmt.Errorf("TUN device name %q: %w", name, err)
		}
		ifr.SetUint16(unix.IFF_TUN | unix.IFF_NO_PI)
		if err := unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr); err != nil {
			unix.Close(fd)
			return fmt.Errorf("creating TUN device %s in %s: %w", name, ns, err)
		}
		f = os.NewFile(uintptr(fd), "tun "+string(ns)+"/"+name)
		return nil
	})
	return f, err
}
