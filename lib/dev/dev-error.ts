/** A problem the developer can fix, said in one message: the `retrysafe` command prints it without a stack. */
export class DevError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'DevError';
  }
}
