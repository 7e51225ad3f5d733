//go:build linux

package main

import (
	"os"
	"syscall"
	"unsafe"
)

// termios reads or writes a terminal's settings.
func termios(f *os.File, req uintptr, t *syscall.Termios) error {
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), req, uintptr(unsafe.Pointer(t))); e != 0 {
		return e
	}
	return nil
}

// isTerminal reports whether f is a terminal.
func isTerminal(f *os.File) bool {
	var t syscall.Termios
	return termios(f, syscall.TCGETS, &t) == nil
}

// noEcho turns the terminal's echo off until restore is called.
func noEcho(f *os.File) (restore func(), err error) {
	var old syscall.Termios
	if err := termios(f, syscall.TCGETS, &old); err != nil {
		return nil, err
	}
	t := old
	t.Lflag &^= syscall.ECHO
	if err := termios(f, syscall.TCSETS, &t); err != nil {
		return nil, err
	}
	return func() { _ = termios(f, syscall.TCSETS, &old) }, nil
}
