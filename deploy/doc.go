// Package deploy holds no code: its test checks the deployment files beside it
// (README.md, "How these files were checked").
package deploy
