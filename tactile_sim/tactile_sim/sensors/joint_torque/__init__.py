"""JointTorque: link-side joint torques by inverse dynamics of the observed motion plus contacts."""
